package remediate

import (
	"errors"
	"fmt"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

type conflictErr struct{}

func (conflictErr) Error() string           { return "ConfigMap team/cm belongs to installation team/other" }
func (conflictErr) OwnershipConflict() bool { return true }

type hookErr struct{}

func (hookErr) Error() string    { return "hook Job migrate failed" }
func (hookErr) HookFailed() bool { return true }

// An ownership conflict waits for a person; a failed hook and anything
// else are retried.
func TestApplyStop(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want news.Stop
	}{
		{err: fmt.Errorf("applying: %w", conflictErr{}), want: news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonOwnershipConflict,
			Message: "applying: ConfigMap team/cm belongs to installation team/other"}},
		{err: hookErr{}, want: news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonHookFailed, Message: "hook Job migrate failed"}},
		{err: errors.New("connection refused"), want: news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonApplyFailed, Message: "connection refused"}},
	} {
		if got := ApplyStop(tc.err); *got != tc.want {
			t.Errorf("ApplyStop(%v) = %+v, want %+v", tc.err, got, tc.want)
		}
	}
}
