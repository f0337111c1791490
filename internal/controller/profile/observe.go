package profile

import (
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/rollout"
)

// failedReasons are the Ready reasons of an installation that failed for
// good: it will not become Ready without a change of its spec.
var failedReasons = []string{v1alpha1.ReasonRolledBack, v1alpha1.ReasonInstallFailed, v1alpha1.ReasonApprovalDenied}

// observe reads, for every cluster p selects, which revision of p it
// runs and how its installations stand (pure), sets each cluster's
// revision and returns the rollout's view of them. The cluster's record
// (clusterRecord) says the revision; installations stamped by a move
// numbered above it say that move was cut short. A cluster without a
// record (none of its installations was written since records exist) is
// read from its installations' revision labels, which every move wrote
// then: disagreeing labels are a move cut short. An installation without
// a revision label counts as the profile's oldest revision (v.adopt).
func observe(p *v1alpha1.ExtensionProfile, all []v1alpha1.ExtensionProfile, clusters []cluster,
	installations []v1alpha1.ExtensionInstallation, v revisionView, newest int64,
	window func(cluster) (rollout.WindowState, error)) []rollout.Cluster {
	onCluster := make(map[string][]*v1alpha1.ExtensionInstallation, len(clusters))
	for i := range installations {
		inst := &installations[i]
		if inst.Labels[v1alpha1.LabelProfile] == p.Name {
			onCluster[inst.Spec.Cluster] = append(onCluster[inst.Spec.Cluster], inst)
		}
	}
	var out []rollout.Cluster
	sel := selectors{}
	for ci := range clusters {
		c := &clusters[ci]
		if !sel.selects(p, *c) {
			continue
		}
		rc := rollout.Cluster{Name: c.name, Labels: c.labels, Reachable: c.reachable, Health: rollout.Ready}
		rc.Window, rc.WindowErr = window(*c)
		insts := onCluster[c.name]
		c.move = c.record.Move
		for _, inst := range insts {
			c.move = max(c.move, moveOf(inst.Annotations))
		}
		switch {
		case (len(insts) > 0 || c.unseen) && c.hasRecord:
			// A record left by installations since removed says nothing
			// of the cluster: read only while it holds some, or was
			// given some the cache does not show yet.
			fromRecord(&rc, c.record, insts, v)
		case len(insts) == 0 && holdsNothing(sel, p, all, *c, v.data[newest]):
			// The newest revision gives it nothing to hold (its owners
			// deleted every Default one): it runs that revision.
			rc.Revision = newest
		default:
			fromLabels(&rc, insts, v)
		}
		if c.unseen {
			// What the cache shows of its installations predates a write:
			// neither Ready nor Failed can be told from it.
			rc.Health, rc.Extension, rc.Reason, rc.Message = rollout.Progressing, "", "", ""
		}
		rc.Changed = len(insts) > 0 && rc.Revision == newest
		c.revision, c.previous = rc.Revision, rc.Previous
		out = append(out, rc)
	}
	return out
}

// fromRecord reads a cluster's revision from its record, and its health
// from all its installations. Installations stamped by a move the record
// does not count yet were written by a move cut short, between the
// revision it ran and the one they carry: the cluster is Partial, at the
// higher of the two, having run the lower (as a move's labels said
// before records).
func fromRecord(rc *rollout.Cluster, rec clusterRecord, insts []*v1alpha1.ExtensionInstallation, v revisionView) {
	rc.Revision, rc.Previous, rc.ChangedAt = rec.Revision, rec.Previous, rec.At
	for _, inst := range insts {
		if moveOf(inst.Annotations) > rec.Move {
			target := v.revisionOf(inst)
			if !rc.Partial {
				rc.Revision, rc.Previous = rec.Revision, rec.Revision
			}
			rc.Partial = true
			rc.Revision, rc.Previous = max(rc.Revision, target), min(rc.Previous, target)
		}
		health(inst, rc)
	}
}

// fromLabels reads a cluster without a record from its installations'
// labels: the highest revision they carry, Partial when they disagree;
// the previous revision, the time of the move and the health from those
// at that revision.
func fromLabels(rc *rollout.Cluster, insts []*v1alpha1.ExtensionInstallation, v revisionView) {
	seen := map[int64]bool{}
	for _, inst := range insts {
		rev := v.revisionOf(inst)
		seen[rev] = true
		if rev > rc.Revision {
			rc.Revision = rev
		}
	}
	rc.Partial = len(seen) > 1
	for _, inst := range insts {
		if rev, err := strconv.ParseInt(inst.Labels[v1alpha1.LabelProfileRevision], 10, 64); err == nil && rev != rc.Revision {
			continue
		}
		if prev, err := strconv.ParseInt(inst.Annotations[v1alpha1.AnnotationProfilePreviousRevision], 10, 64); err == nil {
			rc.Previous = prev
		}
		if at, err := time.Parse(time.RFC3339, inst.Annotations[v1alpha1.AnnotationProfileRevisionAt]); err == nil && at.After(rc.ChangedAt) {
			rc.ChangedAt = at
		}
		health(inst, rc)
	}
}

// holdsNothing reports whether data gives p nothing to hold on c: every
// extension is a Default one its owners deleted, or another profile's.
func holdsNothing(sel selectors, p *v1alpha1.ExtensionProfile, all []v1alpha1.ExtensionProfile, c cluster, data *v1alpha1.ProfileRevisionData) bool {
	if data == nil {
		return false
	}
	for _, ext := range data.Extensions {
		if sel.winner(all, c, ext.Name) != p.Name {
			continue
		}
		if ext.Mode == v1alpha1.ProfileModeEnforced || !slices.Contains(c.defaults[p.Name], ext.Name) {
			return false
		}
	}
	return true
}

// health folds one installation into its cluster's health: the cluster is
// Ready when every installation is Ready with its current spec, Failed
// when one failed for good, else Progressing.
func health(inst *v1alpha1.ExtensionInstallation, rc *rollout.Cluster) {
	ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	stalled := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionStalled)
	current := func(c *metav1.Condition) bool { return c != nil && c.ObservedGeneration == inst.Generation }
	h := rollout.Progressing
	switch {
	case !inst.DeletionTimestamp.IsZero():
	case current(ready) && ready.Status == metav1.ConditionTrue:
		h = rollout.Ready
	case current(stalled) && stalled.Status == metav1.ConditionTrue,
		current(ready) && ready.Status == metav1.ConditionFalse && slices.Contains(failedReasons, ready.Reason):
		h = rollout.Failed
	}
	if rank(h) > rank(rc.Health) {
		rc.Health = h
		rc.Extension = inst.Spec.Extension
		rc.Reason, rc.Message = "", ""
		if ready != nil && h != rollout.Ready {
			rc.Reason, rc.Message = ready.Reason, ready.Message
		}
	}
}

// rank orders health from best to worst.
func rank(h rollout.Health) int {
	switch h {
	case rollout.Ready:
		return 0
	case rollout.Progressing:
		return 1
	}
	return 2
}
