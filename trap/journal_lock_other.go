//go:build !unix

package trap

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens dir's lock file; without flock, nothing stops a second process.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("hit journal: %w", err)
	}
	return f, nil
}
