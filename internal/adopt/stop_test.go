package adopt

import (
	"errors"
	"fmt"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

// A refused adoption stops the installation, retried when the refusal
// may pass; any other error is not a refusal.
func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want *news.Stop
	}{
		{name: "no error"},
		{name: "another error", err: errors.New("connection refused")},
		{name: "refused", err: refused("release %s is not deployed", "web"),
			want: &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonAdoptionRefused, Message: "release web is not deployed"}},
		{name: "retried", err: fmt.Errorf("adopting: %w", retried("release %s is being upgraded", "web")),
			want: &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonAdoptionRefused, Message: "release web is being upgraded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Stop(tc.err)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("Stop = %+v, want %+v", got, tc.want)
			}
		})
	}
}
