package testenv

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// StopProcess asks cmd's started process to stop with SIGTERM and waits
// for it. If it has not exited after grace it is killed, waited for, and
// the returned error says so. A process already waited for is left alone.
func StopProcess(cmd *exec.Cmd, grace time.Duration) error {
	if cmd.Process == nil || cmd.ProcessState != nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
		return nil
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%s (pid %d) did not stop within %s of SIGTERM; killed it", cmd.Path, cmd.Process.Pid, grace)
	}
}
