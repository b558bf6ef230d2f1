//go:build unix

package testdb

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system) this process has used: benchmarks report
// CPU per operation with it, steadier than wall time on a shared machine.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
