package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFileSystem times what a job asks of the file system where the tests keep their data
// (TMPDIR): a directory made, a 2 KiB file written into it under a temporary name and renamed,
// and the directory removed again. The blob store does this with each output (but the removal),
// and a worker about as much with each job's directory and sandbox. It is printed beside the
// per-job figures because on the 2-vCPU VMs we measure on it is not steady: the same steps cost
// 0.06 ms on one minute and 1.7 ms a few minutes later, in every directory of the disk, which
// moves a trivial job's cost by several milliseconds (docs/performance.md).
func BenchmarkFileSystem(b *testing.B) {
	root, data := b.TempDir(), make([]byte, 2048)
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(root, fmt.Sprintf("job%d", i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		tmp := filepath.Join(dir, ".put-tmp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "out.mp4")); err != nil {
			b.Fatal(err)
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(per.Seconds()*1e3, "job-files-ms")
	b.Logf("in %s: a directory, a 2 KiB file written and renamed, the directory removed: %v a job, over %d", os.TempDir(), per.Round(time.Microsecond), b.N)
}
