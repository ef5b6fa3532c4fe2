// Package mediatype says what media type a file is served with: sniffed from its bytes when it
// is stored, named by its extension when only the name is known.
package mediatype

import (
	"mime"
	"net/http"
	"path"
	"strings"
)

// byExt are the types this service serves by extension; others come from the mime
// package or are application/octet-stream.
var byExt = map[string]string{
	".m3u8": "application/vnd.apple.mpegurl",
	".mpd":  "application/dash+xml",
	".ts":   "video/mp2t",
	".m4s":  "video/iso.segment",
	".mp4":  "video/mp4",
	".m4v":  "video/mp4",
	".m4a":  "audio/mp4",
	".mkv":  "video/x-matroska",
	".webm": "video/webm",
	".mov":  "video/quicktime",
	".avi":  "video/x-msvideo",
	".gif":  "image/gif",
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".webp": "image/webp",
	".mp3":  "audio/mpeg",
	".wav":  "audio/wav",
	".flac": "audio/flac",
	".ogg":  "audio/ogg",
	".oga":  "audio/ogg",
	".opus": "audio/ogg",
	".aac":  "audio/aac",
	".srt":  "application/x-subrip",
	".vtt":  "text/vtt",
	".ass":  "text/x-ssa",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// SniffLen is how much of a file Sniff reads (http.DetectContentType reads 512 bytes).
const SniffLen = 512

// Sniff is the media type of an upload, from its first bytes: http.DetectContentType, and
// for what it cannot tell (containers it does not know, such as Matroska, MPEG-TS, QuickTime
// and FLAC, sniffed as application/octet-stream; subtitles and lists, sniffed as plain text)
// the type its name's extension names, when that is of the same kind. Anything else keeps the
// sniffed type, and the client's declared type is never used.
func Sniff(head []byte, name string) string {
	sniffed := http.DetectContentType(head)
	byName := ByName(name)
	switch {
	case sniffed == "application/octet-stream" && (strings.HasPrefix(byName, "video/") || strings.HasPrefix(byName, "audio/")):
		return byName
	case strings.HasPrefix(sniffed, "text/plain") && textTypes[byName]:
		return byName
	case sniffed == "video/webm" && byName == "video/x-matroska":
		return byName // DetectContentType calls every EBML file WebM
	}
	return sniffed
}

// textTypes are text formats the service serves by extension that sniff as plain text.
var textTypes = map[string]bool{
	"application/x-subrip": true, "text/vtt": true, "text/x-ssa": true,
	"application/vnd.apple.mpegurl": true, "text/plain; charset=utf-8": true,
}

// ByName is the media type a file name's extension names, application/octet-stream when none.
func ByName(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if t, ok := byExt[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return "application/octet-stream"
}

// IsMedia tells video, audio and image types, which browsers render without running scripts
// (SVG, an image type that can carry scripts, is not counted).
func IsMedia(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	top, _, _ := strings.Cut(mt, "/")
	return (top == "video" || top == "audio" || top == "image") && mt != "image/svg+xml"
}
