//go:build !unix

package testdb

import "time"

// ProcessCPU is unknown here: CPU metrics read 0.
func ProcessCPU() time.Duration { return 0 }
