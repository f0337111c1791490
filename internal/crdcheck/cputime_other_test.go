//go:build !unix

package crdcheck

// cpuTime is not measured outside unix.
func cpuTime() (int64, bool) { return 0, false }
