//go:build !linux

package localcluster

import "syscall"

// childAttr puts a child in its own process group, so Stop can signal
// everything it spawned. Only Linux can also tie the child's life to ours.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
