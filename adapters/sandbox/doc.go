// Package sandbox runs FFmpeg or ffprobe under bubblewrap: new namespaces, no network, a clean
// environment, a read-only system, one writable work directory, rlimits and a hard deadline.
package sandbox
