// Package transcribetest is the one suite every captionburn.Transcriber adapter passes (speech,
// word timings, languages, silence, missing files, cancels), the clips it speaks with espeak-ng,
// and a fake OpenAI-compatible transcription server to run the HTTP client against.
package transcribetest
