// Package captionburn is the `caption.burn` job type: subtitles (SRT, VTT, ASS, or a transcript of
// the audio) burned into a video with a style. It also holds the URL inputs, the caption params
// and the Transcriber and FontResolver ports that extract.metadata and captions.animate share.
package captionburn
