package mediajobs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// dataLockName is the file in the data directory a serving process holds locked.
const dataLockName = "serve.lock"

// ErrDataInUse is the error of LockData when another process serves from the data directory.
var ErrDataInUse = errors.New("data directory in use")

// LockData takes the data directory for this process's serving alone: two servers on one
// SQLite database and one set of work directories would run each job's background work twice
// and share what neither can share. It holds flock(2) on <data>/serve.lock, which the kernel
// releases when the process ends however it ends, so a crash leaves no stale lock; the file
// keeps the holder's PID for the message of the next one. Only the embedded default (SQLite in
// the data directory) is locked: replicas on PostgreSQL share their store by design. Admin
// commands (accounts, keys, workers) open the directory without this lock, so they work while
// a server runs. Calling it again is a no-op; Start calls it, and Close releases it.
func (a *App) LockData() error {
	if a.Config.DatabaseURL != "" || a.dataLock != nil {
		return nil
	}
	path := filepath.Join(a.Config.Data, dataLockName)
	// No O_TRUNC: the file must not lose the holder's PID before the lock is ours.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w: %s is served by another mediajobs process%s, which holds %s; stop it, or give this one another --data",
				ErrDataInUse, a.Config.Data, holder, path)
		}
		return fmt.Errorf("data directory: lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	a.dataLock = f
	return nil
}

// unlockData releases LockData's lock.
func (a *App) unlockData() {
	if a.dataLock != nil {
		_ = a.dataLock.Close()
		a.dataLock = nil
	}
}
