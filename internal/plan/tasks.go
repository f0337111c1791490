package plan

import (
	"errors"
	"fmt"
)

// What a task's outcome means for its step: the applier applies,
// deletes and runs pipes; these say what came of it.

// Applied is the result of an Apply task from the health of what it
// applied: failed is fatal, not ready yet waits (summary says for what),
// ready is done.
func Applied(task string, failed, ready bool, summary string) StepResult {
	switch {
	case failed:
		return Fatal(task, errors.New(summary))
	case !ready:
		return Waiting(task, summary)
	}
	return StepResult{Done: true}
}

// Deleted is the result of a Delete task that asked total objects to go,
// of which remaining are not gone yet.
func Deleted(task string, remaining, total int) StepResult {
	if remaining > 0 {
		return Waiting(task, fmt.Sprintf("waiting for %d of %d objects to be deleted", remaining, total))
	}
	return StepResult{Done: true}
}

// Piped is the result of a Pipe task: an error that says it is permanent
// (a Permanent() bool method) is fatal, another is retried; a pipe not
// done yet waits, with its message.
func Piped(task string, done bool, message string, err error) StepResult {
	switch {
	case err != nil:
		var permanent interface{ Permanent() bool }
		if errors.As(err, &permanent) && permanent.Permanent() {
			return Fatal(task, err)
		}
		return Failed(task, err)
	case !done:
		return Waiting(task, message)
	}
	return StepResult{Done: true}
}
