package installation

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// fetch downloads the chosen version's artifact with its engine: a
// chart's or a package's archive, or an operator bundle's registry+v1
// tree as its canonical JSON, which the revision's digest covers.
func (r *Reconciler) fetch(ctx context.Context, s *scope) (ctrl.Result, error) {
	data, err := r.engine(s.choice.Version.Engine).Fetch(ctx, s.choice.Version.Source)
	if err != nil {
		v := s.choice.Version
		prefix := fmt.Sprintf("fetching %s %s from %s", s.inst.Spec.Extension, v.Version, v.Source.URL)
		var mismatch digestMismatch
		var permanent interface{ Permanent() bool }
		switch {
		case errors.As(err, &mismatch):
			// The same bytes are refused every time: stop. A resync that
			// records the new digest changes the Extension, and a change of
			// the Extension wakes this installation (SetupWithManager).
			s.block = terminal(v1alpha1.ReasonDigestMismatch, digestMismatchMessage(prefix, v.Source.Catalog, mismatch))
		case errors.As(err, &permanent) && permanent.Permanent():
			// A hostile or oversized archive is refused the same way every
			// time: stop until the catalog or spec.version changes.
			s.block = terminal(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: %v; choose another version with spec.version, or fix the chart in its catalog", prefix, err))
		default:
			s.block = retry(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: %v; Annex tries again: check that this URL serves the artifact to the manager", prefix, err))
		}
		setCondition(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.reason, s.block.message)
		if s.block.kind == blockTerminal {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, s.block
	}
	s.artifact.data, s.artifact.digest = data, digestOf(data)
	if a := s.inst.Status.Artifact; a != nil && a.Version == s.choice.Version.Version && a.URL == s.choice.Version.Source.URL {
		a.Digest = s.artifact.digest
	}
	return ctrl.Result{}, nil
}

// digestMismatch is a fetch error for an artifact whose content is not the
// one its catalog indexed (the catalog package's DigestMismatchError): want
// is the digest the catalog recorded, got the content's.
type digestMismatch interface {
	Digests() (want, got string)
}

// digestMismatchMessage names both digests and the two ways out.
func digestMismatchMessage(prefix, catalogName string, mismatch digestMismatch) string {
	want, got := mismatch.Digests()
	recorder, resync := "the Extension", "update the Extension's digest"
	if catalogName != "" {
		recorder = fmt.Sprintf("catalog %q", catalogName)
		resync = fmt.Sprintf("resync catalog %q (it syncs every spec.interval, or at once when its spec changes) so that it records the new digest", catalogName)
	}
	return fmt.Sprintf("%s: the artifact has digest %s, but %s recorded %s: it changed after it was indexed. If the change is intended, %s and the installation goes on; otherwise choose another version with spec.version",
		prefix, got, recorder, want, resync)
}
