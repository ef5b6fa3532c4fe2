// Package sandbox runs FFmpeg or ffprobe under bubblewrap: new namespaces, no network, a clean
// environment, a read-only system, one writable work directory, rlimits, per-job caps on the
// bytes and files written (stopped the moment they are passed), a hard deadline, and for GPU
// work only the NVIDIA device nodes and driver libraries. Runner is what every sandbox
// implementation (this one, the Docker adapter) offers; sandboxtest holds them to one suite.
package sandbox
