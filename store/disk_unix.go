//go:build unix

package store

import (
	"path/filepath"
	"syscall"
)

// FreeSpace is the space an unprivileged process may still write on the file system
// holding path (its directory, so a file not made yet is fine).
func FreeSpace(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
