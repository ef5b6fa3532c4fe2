//go:build !linux

package s3test

import "syscall"

// sysProcAttr is empty where there is no parent-death signal; the test's cleanup stops the
// server.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
