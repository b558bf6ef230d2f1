//go:build !unix

package server

// openFileLimit is the process's open-file limit: unknown here.
func openFileLimit() uint64 { return 0 }
