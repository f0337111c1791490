package plan

import (
	"errors"
	"fmt"
	"testing"
)

type permanentErr struct{ error }

func (permanentErr) Permanent() bool { return true }

// What each task outcome makes of its step.
func TestTaskResults(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  StepResult
		want StepResult
	}{
		// Applied objects that can never become healthy.
		{"apply failed", Applied("deploy", true, false, "Deployment web: ImagePullBackOff"), StepResult{Fatal: true, Message: "task deploy: Deployment web: ImagePullBackOff"}},
		// Applied, not ready yet.
		{"apply waits", Applied("deploy", false, false, "1 of 2 ready"), StepResult{Message: "task deploy: 1 of 2 ready"}},
		{"apply done", Applied("deploy", false, true, ""), StepResult{Done: true}},
		{"delete waits", Deleted("drop", 2, 3), StepResult{Message: "task drop: waiting for 2 of 3 objects to be deleted"}},
		{"delete done", Deleted("drop", 0, 3), StepResult{Done: true}},
		// A pipe error that says it is permanent stops the plan.
		{"pipe permanent", Piped("gen", false, "", fmt.Errorf("wrapped: %w", permanentErr{errors.New("bad spec")})), StepResult{Fatal: true, Message: "task gen: wrapped: bad spec"}},
		// Any other is retried.
		{"pipe transient", Piped("gen", false, "", errors.New("timeout")), StepResult{Failed: true, Message: "task gen: timeout; retrying"}},
		{"pipe waits", Piped("gen", false, "pod pending", nil), StepResult{Message: "task gen: pod pending"}},
		{"pipe done", Piped("gen", true, "", nil), StepResult{Done: true}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
}
