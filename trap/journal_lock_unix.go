//go:build unix

package trap

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes dir's lock file for this process: a second instance given the same
// journal directory stops at start instead of replaying, and so applying, another's hits.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("hit journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("hit journal %s is in use by another process: give each instance its own --hit-journal (%w)", dir, err)
	}
	return f, nil
}
