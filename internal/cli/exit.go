package cli

import (
	"errors"
	"fmt"
)

// Exit codes of annexctl. They are part of its interface: scripts branch
// on them, and `annexctl --help` lists them.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitError: the command failed; the message names the object and
	// the fix. An installation that stalled during --wait ends here too.
	ExitError = 1
	// ExitUsage: the command line is wrong (unknown flag, missing
	// argument, bad -o); nothing was read or changed.
	ExitUsage = 2
	// ExitNotReady: --wait ran out of --timeout before the installation
	// was Ready (it may still become Ready; annexctl status tells).
	ExitNotReady = 3
	// ExitApprovalPending: the change waits for an Approval, which
	// someone other than its requester gives with annexctl approve.
	ExitApprovalPending = 4
)

// ExitCodeError is an error with the exit code annexctl ends with.
type ExitCodeError struct {
	Code int
	Err  error
}

func (e *ExitCodeError) Error() string { return e.Err.Error() }
func (e *ExitCodeError) Unwrap() error { return e.Err }

// Usagef is a usage error (exit code 2).
func Usagef(format string, args ...any) error {
	return &ExitCodeError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// ExitCode is the exit code for err: 0 for nil, the code of an
// ExitCodeError in its chain, else 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *ExitCodeError
	if errors.As(err, &e) {
		return e.Code
	}
	return ExitError
}
