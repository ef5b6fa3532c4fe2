// Package captionsanimate is the `captions.animate` job type: word-level animated captions (the
// spoken word highlighted, optionally popped) burned into a video, from a transcript or from the
// audio itself.
package captionsanimate
