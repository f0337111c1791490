package engine

import (
	"errors"
	"fmt"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// digestMismatch is a fetch error for an artifact whose content is not
// the one its catalog indexed (the catalog's DigestMismatchError): want
// is the digest the catalog recorded, got the content's.
type digestMismatch interface {
	Digests() (want, got string)
}

// FetchRefusal is the refusal, phrased for the user, of an artifact
// that Engine.Fetch of ref ("podinfo 6.5.0") from source failed to get.
// An artifact whose digest is not the one its catalog recorded fails
// the same way every time: it stops until a resync records the new
// digest (which changes the Extension) or spec.version changes. So does
// one refused with a Permanent error (a hostile or oversized archive).
// Anything else is retried.
func FetchRefusal(err error, ref string, source v1alpha1.ArtifactSource) *Error {
	prefix := fmt.Sprintf("fetching %s from %s", ref, source.URL)
	var mismatch digestMismatch
	var permanent interface{ Permanent() bool }
	switch {
	case errors.As(err, &mismatch):
		want, got := mismatch.Digests()
		recorder, resync := "the Extension", "update the Extension's digest"
		if source.Catalog != "" {
			recorder = fmt.Sprintf("catalog %q", source.Catalog)
			resync = fmt.Sprintf("resync catalog %q (it syncs every spec.interval, or at once when its spec changes) so that it records the new digest", source.Catalog)
		}
		return &Error{Reason: v1alpha1.ReasonDigestMismatch, Message: fmt.Sprintf(
			"%s: the artifact has digest %s, but %s recorded %s: it changed after it was indexed. If the change is intended, %s and the installation goes on; otherwise choose another version with spec.version",
			prefix, got, recorder, want, resync)}
	case errors.As(err, &permanent) && permanent.Permanent():
		return &Error{Reason: v1alpha1.ReasonArtifactFailed, Message: fmt.Sprintf(
			"%s: %v; choose another version with spec.version, or fix the chart in its catalog", prefix, err)}
	}
	return &Error{Reason: v1alpha1.ReasonArtifactFailed, Retry: true, Message: fmt.Sprintf(
		"%s: %v; Annex tries again: check that this URL serves the artifact to the manager", prefix, err)}
}
