// Package preflight answers, before a cluster moves to another Kubernetes
// version, what its installations would do there: the version each would
// move to or why none fits, and every installed object whose API version
// that release no longer serves. It is pure: values in, a report out.
// `annexctl preflight` prints the report; a ManagedCluster with
// spec.upgradeTarget carries its summary as a condition.
package preflight

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/resolve"
)

// RemovedObject is an installed object the target version no longer
// serves.
type RemovedObject struct {
	Installation string // namespace/name
	Object       v1alpha1.ObjectReference
	Removal      kubeapis.Removal
}

// Report is what a cluster's installations would do at KubeVersion.
type Report struct {
	KubeVersion string
	Problem     resolve.Problem
	Resolution  *resolve.Resolution
	Removed     []RemovedObject
}

// Check resolves the installations (of one cluster) for kubeVersion over the
// extensions on offer, and finds the installed objects it removed.
func Check(kubeVersion string, extensions []v1alpha1.Extension, installations []*v1alpha1.ExtensionInstallation) (Report, error) {
	if _, err := semver.NewVersion(kubeVersion); err != nil {
		return Report{}, fmt.Errorf("Kubernetes version %q: %w", kubeVersion, err)
	}
	problem := resolve.ProblemFor(kubeVersion, installations)
	removed, err := RemovedObjects(kubeVersion, installations)
	if err != nil {
		return Report{}, err
	}
	return Report{KubeVersion: kubeVersion, Problem: problem, Removed: removed,
		Resolution: resolve.IndexOf(extensions).Solve(problem)}, nil
}

// RemovedObjects lists the objects in the installations' inventories
// whose API version kubeVersion no longer serves.
func RemovedObjects(kubeVersion string, installations []*v1alpha1.ExtensionInstallation) ([]RemovedObject, error) {
	var out []RemovedObject
	for _, inst := range installations {
		for _, ref := range inst.Status.Inventory {
			removal, err := kubeapis.RemovedIn(ref.Group, ref.Version, ref.Kind, kubeVersion)
			if err != nil {
				return nil, err
			}
			if removal != nil {
				out = append(out, RemovedObject{Installation: inst.Namespace + "/" + inst.Name, Object: ref, Removal: *removal})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Installation+a.Object.Kind+a.Object.Namespace+a.Object.Name < b.Installation+b.Object.Kind+b.Object.Namespace+b.Object.Name
	})
	return out, nil
}

// OK reports whether every installation has a version at KubeVersion and
// nothing installed uses an API version it removed.
func (r Report) OK() bool { return len(r.Resolution.Failed) == 0 && len(r.Removed) == 0 }

// Summary says in one paragraph what stands in the way, or that nothing
// does; the same report gives the same words.
func (r Report) Summary() string {
	if r.OK() {
		return fmt.Sprintf("every installation has a version for Kubernetes %s and no installed object uses an API version it removed", r.KubeVersion)
	}
	var parts []string
	names := make([]string, 0, len(r.Resolution.Failed))
	for name := range r.Resolution.Failed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		parts = append(parts, r.Resolution.Failed[name].Message)
	}
	for i, o := range r.Removed {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more objects", len(r.Removed)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%s has %s %s of %s, which Kubernetes %s removed; use %s",
			o.Installation, o.Object.Kind, o.Object.Name, APIVersion(o.Object), o.Removal.RemovedIn, o.Removal.Use))
	}
	return fmt.Sprintf("not ready for Kubernetes %s: %s", r.KubeVersion, strings.Join(parts, "; "))
}

// APIVersion is "group/version", or "version" for the core group.
func APIVersion(ref v1alpha1.ObjectReference) string {
	if ref.Group == "" {
		return ref.Version
	}
	return ref.Group + "/" + ref.Version
}
