package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/annex-platform/annex/internal/news"
)

func TestRefusal(t *testing.T) {
	broken := &Error{Reason: "RenderFailed", Message: "templates/a.yaml: bad"}
	later := &Error{Reason: "BaseUnavailable", Message: "base 1.0 did not download", Retry: true}
	for _, tc := range []struct {
		name    string
		err     error
		adopted string
		want    *news.Stop
	}{
		{name: "not the engine's", err: errors.New("connection refused")},
		{name: "retried", err: fmt.Errorf("render: %w", later), adopted: "web",
			want: &news.Stop{Kind: news.Retry, Reason: "BaseUnavailable", Message: "base 1.0 did not download"}},
		{name: "terminal", err: broken, want: &news.Stop{Kind: news.Terminal, Reason: "RenderFailed", Message: "templates/a.yaml: bad"}},
		{name: "an adoption", err: broken, adopted: "web", want: &news.Stop{Kind: news.Terminal, Reason: "RenderFailed", Message: "templates/a.yaml: bad; " +
			"the chart does not render with the values of Helm release web (spec.values, copied from it) that spec.adopt names: change spec.values, or fix the release with helm upgrade and adopt it again"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Refusal(tc.err, tc.adopted)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("Refusal = %+v, want %+v", got, tc.want)
			}
		})
	}
}
