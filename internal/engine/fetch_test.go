package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// mismatch is a fetched artifact whose digest is not the recorded one.
type mismatch struct{ want, got string }

func (m mismatch) Error() string               { return "digest mismatch" }
func (m mismatch) Digests() (want, got string) { return m.want, m.got }

// hostile is an archive refused the same way every time.
type hostile struct{}

func (hostile) Error() string   { return "archive entry ../etc/passwd escapes the archive" }
func (hostile) Permanent() bool { return true }

func TestFetchRefusal(t *testing.T) {
	fromCatalog := v1alpha1.ArtifactSource{Catalog: "stable", URL: "https://charts.example.com/podinfo-6.5.0.tgz"}
	inline := v1alpha1.ArtifactSource{URL: "https://charts.example.com/podinfo-6.5.0.tgz"}
	for _, tc := range []struct {
		name   string
		err    error
		source v1alpha1.ArtifactSource
		want   Error
	}{
		// A catalog's artifact that changed since it was indexed: both
		// digests, and a resync of that catalog as the way out.
		{name: "digest of a catalog", err: fmt.Errorf("get: %w", mismatch{want: "sha256:aaa", got: "sha256:bbb"}), source: fromCatalog,
			want: Error{Reason: v1alpha1.ReasonDigestMismatch, Message: `fetching podinfo 6.5.0 from https://charts.example.com/podinfo-6.5.0.tgz: the artifact has digest sha256:bbb, but catalog "stable" recorded sha256:aaa: it changed after it was indexed. If the change is intended, resync catalog "stable" (it syncs every spec.interval, or at once when its spec changes) so that it records the new digest and the installation goes on; otherwise choose another version with spec.version`}},
		// An Extension written by hand records the digest itself.
		{name: "digest of an Extension", err: mismatch{want: "sha256:aaa", got: "sha256:bbb"}, source: inline,
			want: Error{Reason: v1alpha1.ReasonDigestMismatch, Message: `fetching podinfo 6.5.0 from https://charts.example.com/podinfo-6.5.0.tgz: the artifact has digest sha256:bbb, but the Extension recorded sha256:aaa: it changed after it was indexed. If the change is intended, update the Extension's digest and the installation goes on; otherwise choose another version with spec.version`}},
		// A hostile archive stops too.
		{name: "permanent", err: fmt.Errorf("read: %w", hostile{}), source: fromCatalog,
			want: Error{Reason: v1alpha1.ReasonArtifactFailed, Message: "fetching podinfo 6.5.0 from https://charts.example.com/podinfo-6.5.0.tgz: read: archive entry ../etc/passwd escapes the archive; choose another version with spec.version, or fix the chart in its catalog"}},
		// Anything else (the network, the registry) is retried.
		{name: "transient", err: errors.New("connection refused"), source: fromCatalog,
			want: Error{Reason: v1alpha1.ReasonArtifactFailed, Retry: true, Message: "fetching podinfo 6.5.0 from https://charts.example.com/podinfo-6.5.0.tgz: connection refused; Annex tries again: check that this URL serves the artifact to the manager"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FetchRefusal(tc.err, "podinfo 6.5.0", tc.source); *got != tc.want {
				t.Errorf("FetchRefusal() =\n%+v\nwant\n%+v", *got, tc.want)
			}
		})
	}
}
