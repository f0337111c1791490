package localcluster

import "syscall"

// childAttr puts a child in its own process group, so Stop can signal
// everything it spawned, and has the kernel kill it if the thread that started
// it dies, so a crashed `annex dev` or test binary leaves no etcd behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
