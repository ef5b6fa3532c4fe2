package s3test

import "syscall"

// sysProcAttr has the kernel kill versitygw if the test binary dies without its cleanups.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
