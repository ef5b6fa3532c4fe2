// Package sandboxtest is the one suite every sandbox implementation (bubblewrap, Docker) must
// pass: FFmpeg runs, exit codes and stderr, deadlines and cancels, the per-job caps, and escapes.
//
// A new implementation's test ends through testenv when it cannot run here, then calls TestRunner
// once, with the Features it shows and claims and a Constructor that returns the runner:
//
//	sandboxtest.TestRunner(t, sandboxtest.Features{OwnSystem: true}, func(t *testing.T) sandbox.Runner { return sb })
//
// Each test of the suite is an exported function too (TestEscapes, …), so a failure names the
// function to read, and -run selects it by that name.
package sandboxtest
