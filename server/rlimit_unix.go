//go:build unix

package server

import "syscall"

// openFileLimit is the process's open-file limit (RLIMIT_NOFILE), 0 if unknown.
func openFileLimit() uint64 {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) != nil {
		return 0
	}
	return uint64(r.Cur) // int64 on some systems
}
