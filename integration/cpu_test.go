package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuTimes is the CPU (user + system) spent so far by the server, by every PostgreSQL process
// on this machine, and by this test process (the load generator). Read from /proc; zero where
// it cannot be read.
type cpuTimes struct{ server, postgres, self time.Duration }

func (s *server) cpuUsage() cpuTimes {
	var c cpuTimes
	s.mu.Lock()
	if s.cmd != nil && s.cmd.Process != nil {
		c.server = procCPU("/proc/" + strconv.Itoa(s.cmd.Process.Pid))
	}
	s.mu.Unlock()
	c.self = procCPU("/proc/self")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if comm, err := os.ReadFile(d + "/comm"); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			c.postgres += procCPU(d)
		}
	}
	return c
}

// procCPU reads utime + stime of the process at dir (/proc/<pid>), in clock ticks of 1/100 s.
func procCPU(dir string) time.Duration {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields are counted after its end.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
