// Package sandboxtest is the one suite every sandbox implementation (bubblewrap, Docker) must
// pass: FFmpeg runs, exit codes and stderr, deadlines and cancels, the per-job caps, and escapes.
package sandboxtest
