// Package transcribe implements the captionburn.Transcriber port: pocketsphinx with Debian's
// US-English model, run in the sandbox, and any OpenAI-compatible /v1/audio/transcriptions server.
package transcribe
