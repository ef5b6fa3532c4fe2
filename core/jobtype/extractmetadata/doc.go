// Package extractmetadata is the `extract.metadata` job type: ffprobe's view of a media file as a
// documented, stable JSON answer in output.data (the Metadata type).
package extractmetadata
