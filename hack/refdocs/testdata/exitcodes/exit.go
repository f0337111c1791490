package exitcodes

// Exit codes.
const (
	// ExitOK: it worked.
	ExitOK = 0
	// ExitRetry: try again
	// later.
	ExitRetry = 3
	// NotAnExitCode is left out: it does not start with the prefix.
	NotAnExitCode = 9
)
