package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is one running control-plane process whose output goes to a log file.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited and been reaped
	err     error         // exit status, valid after done is closed
}

// startChild starts path with args, appending its output to logPath.
func startChild(name, path string, args []string, logPath string) (*child, error) {
	return startCommand(name, exec.Command(path, args...), logPath)
}

// startCommand starts cmd in a process group of its own, appending its
// output to logPath.
func startCommand(name string, cmd *exec.Cmd, logPath string) (*child, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "\n=== %s %s\n", time.Now().Format(time.RFC3339), strings.Join(cmd.Args, " "))
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

// exited reports whether the process has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the child's process group, waits up to grace for the
// child to exit, then sends SIGKILL to the group and waits for the child to be
// reaped. It returns nil when the process is gone, however it ended.
func (c *child) stop(grace time.Duration) error {
	pgid := c.cmd.Process.Pid // Setpgid makes the child lead a group of its own id
	if !c.exited() {
		if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop %s: %w", c.name, err)
		}
		select {
		case <-c.done:
		case <-time.After(grace):
		}
	}
	// Kill the group even after the leader exited: anything it forked dies too.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", c.name, err)
	}
	<-c.done
	return nil
}

// tail returns the last lines of the child's log, for error messages.
func (c *child) tail(lines int) string {
	return tailFile(c.logPath, lines)
}

// tailFile returns at most the last n lines of the file at path, read from
// its last 16 KiB.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 16 << 10
	if info, err := f.Stat(); err == nil && info.Size() > window {
		if _, err := f.Seek(info.Size()-window, io.SeekStart); err != nil {
			return ""
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
