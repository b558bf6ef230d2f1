//go:build !unix

package store

// FreeSpace is not known here.
func FreeSpace(path string) (int64, error) { return 0, ErrNoDiskCheck }
