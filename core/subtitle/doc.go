// Package subtitle parses SRT and WebVTT files as they are found in the wild, checks ASS files
// enough to refuse junk, and writes styled ASS scripts (plain and word-level karaoke) for libass.
//
// Cue text from SRT and VTT is untrusted: markup is stripped and anything libass would read as an
// override tag ({\fn...}, \N) is neutralised, so a cue can change neither the font nor the layout.
package subtitle
