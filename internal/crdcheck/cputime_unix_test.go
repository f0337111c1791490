//go:build unix

package crdcheck

import "syscall"

// cpuTime is the user and system time the process has used so far, in
// nanoseconds: on a shared machine it says what a benchmark costs where wall
// time says how busy the machine was.
func cpuTime() (int64, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return u.Utime.Nano() + u.Stime.Nano(), true
}
