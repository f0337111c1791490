package gate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/values"
)

// Events: what a change is, for the gates that judge it.
const (
	EventPreInstall = "PreInstall"
	EventPreUpgrade = "PreUpgrade"
	// EventPreUninstall is the change an uninstall is, for the hooks.
	EventPreUninstall = string(v1alpha1.HookPreUninstall)
)

// Pending is a change: what a reconcile is about to apply (or, for an uninstall,
// remove), as the gates see it. Gates judge changes only: a reconcile
// that re-applies the installed revision (drift correction, a resumed
// plan) passes them, and a gate's verdict, kept by the change's digest,
// never carries over to different content.
type Pending struct {
	// Event is EventPreInstall, EventPreUpgrade (a new version, new
	// values, new content of the same version) or EventPreUninstall.
	Event string
	// From is the installed version ("" for an install), To the one the
	// change applies.
	From, To string
	// ArtifactDigest and ValuesDigest identify the inputs.
	ArtifactDigest, ValuesDigest string
	// Objects are everything the change may apply: a chart's CRDs and
	// objects, or every object of a package's or bundle's plans (for an
	// uninstall: the installed revision's).
	Objects []*unstructured.Unstructured
	// Digest is what a hook judged and what an approval approves.
	Digest string
}

// NewPending is the change from version from ("": an install) to to,
// made of the inputs artifactDigest and valuesDigest, applying objects
// on a cluster of Kubernetes clusterVersion; trigger tells a package
// plan's run on request (spec.plans.run) from the install with the same
// inputs ("" otherwise). Its digest covers the inputs, not the rendered
// objects: a chart that generates a password or a certificate renders
// differently each time, and its change must keep one digest while a
// gate holds it. The same inputs on the same Kubernetes version render
// the same objects otherwise; the objects a gate saw are what it judged.
func NewPending(from, to, artifactDigest, valuesDigest, clusterVersion, trigger string, objects []*unstructured.Unstructured) (*Pending, error) {
	c := &Pending{Event: EventPreUpgrade, From: from, To: to, ArtifactDigest: artifactDigest, ValuesDigest: valuesDigest, Objects: objects}
	if from == "" {
		c.Event = EventPreInstall
	}
	var err error
	c.Digest, err = values.Digest(map[string]any{
		"event": c.Event, "from": c.From, "to": c.To, "artifact": c.ArtifactDigest, "values": c.ValuesDigest,
		"kubernetes": clusterVersion, "trigger": trigger,
	})
	return c, err
}

// UninstallPending is the uninstall of version from, whose installed
// revision (made of artifactDigest and valuesDigest) holds objects; its
// digest covers the version and the objects.
func UninstallPending(from, artifactDigest, valuesDigest string, objects []*unstructured.Unstructured) (*Pending, error) {
	manifest, err := values.ManifestDigest(nil, objects)
	if err != nil {
		return nil, err
	}
	c := &Pending{Event: EventPreUninstall, From: from, ArtifactDigest: artifactDigest, ValuesDigest: valuesDigest, Objects: objects}
	c.Digest, err = values.Digest(map[string]any{"event": c.Event, "from": c.From, "manifest": manifest})
	return c, err
}

// Describe is status.change for c, whose objects' permissions change
// by diff against the installed revision's and whose artifact's
// verification is artifact. When old is the same change (its digest),
// old is updated and returned: what the other gates recorded for this
// very change stays.
func Describe(c *Pending, diff Change, artifact *v1alpha1.ArtifactStatus, old *v1alpha1.PendingChange) *v1alpha1.PendingChange {
	pc := &v1alpha1.PendingChange{
		Event: c.Event, FromVersion: c.From, ToVersion: c.To, Digest: c.Digest,
		PermissionsGrow: diff.Grows, PermissionsShrink: diff.Shrinks,
		ArtifactDigest: c.ArtifactDigest, SignedBy: SignedBy(artifact),
	}
	if old == nil || old.Digest != pc.Digest {
		return pc
	}
	old.Event, old.FromVersion, old.ToVersion = pc.Event, pc.FromVersion, pc.ToVersion
	old.PermissionsGrow, old.PermissionsShrink = pc.PermissionsGrow, pc.PermissionsShrink
	old.ArtifactDigest, old.SignedBy = pc.ArtifactDigest, pc.SignedBy
	return old
}

// SignedBy is who signed the artifact a, for status.change: the
// identity and provider when verified, "not verified (<reason>, Audit)"
// when an Audit policy let it through, "" when no policy applies.
func SignedBy(a *v1alpha1.ArtifactStatus) string {
	switch {
	case a == nil || a.Verification == nil:
		return ""
	case a.Verification.Verified:
		return fmt.Sprintf("%s (%s)", a.Verification.Identity, a.Verification.Provider)
	}
	return fmt.Sprintf("not verified (%s, %s)", a.Verification.Reason, a.Verification.Mode)
}
