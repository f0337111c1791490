package installation

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/record"
	"github.com/annex-platform/annex/internal/remediate"
	"github.com/annex-platform/annex/internal/target"
)

// apply writes the rendered set, records it, and prunes what left it. An
// unchanged set of the same generation is not applied again; its drift is
// checked instead.
func (r *Reconciler) apply(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if s.artifact.release.Resumable() {
		// A release with plans runs them across reconciles, resumed from
		// status.pending and status.plans (plans.go). A release without (a
		// chart) runs its one-pass plan (Release.OnePass) here, in this
		// reconcile, through the same driver (applyOnePass) but without
		// checkpoints: its record, status and events are those of one
		// apply (Release.Resumable says why).
		return r.runPackage(ctx, s)
	}
	if isFailedTarget(s) {
		return r.holdFailed(ctx, s)
	}
	if upToDate(s) {
		s.applied.inventory = inst.Status.Inventory
		return r.checkDrift(ctx, s, target.Set{CRDs: s.artifact.release.CRDs, Objects: r.withTargetNamespace(ctx, s, s.artifact.release.Objects, false)})
	}
	set := target.Set{CRDs: s.artifact.release.CRDs, Objects: r.withTargetNamespace(ctx, s, s.artifact.release.Objects, true)}
	rev := r.nextRevision(s)
	// Nothing applied yet (writeIntent adds the planned objects to the
	// inventory): the objects are created, one request each where reading
	// and applying take two.
	first := inst.Status.InstalledVersion == "" && len(inst.Status.Inventory) == 0

	// Record the intent first, so that a crash at any instant leaves
	// nothing unowned and the next reconcile resumes (see writeIntent).
	if err := r.writeIntent(ctx, s, &rev, set); err != nil {
		return ctrl.Result{}, ignoreRefused(err)
	}
	failpoint.Hit(failpoint.AfterIntent, s.owner().String())
	inst.Status.Pending = &rev
	if target.HasHooks(set.Objects) {
		// Hooks may run for minutes: show what is being applied meanwhile.
		if err := r.persist(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}

	start, op := time.Now(), metrics.OpInstall
	if inst.Status.InstalledVersion != "" {
		op = metrics.OpUpgrade
	}
	objects, opts := s.artifact.adoption.Objects(set.Objects), target.ApplyOptions{
		HookTimeout:   readiness.TimeoutOf(inst),
		TakeOwnership: inst.Spec.TakeOwnership,
		Create:        first,
	}.Adopting(s.artifact.adoption)
	applied, st, err := r.applyOnePass(ctx, s, s.artifact.release.OnePass(set.CRDs, objects), opts)
	metrics.ObserveApply(op, time.Since(start))
	if st != nil {
		// A chart's apply shows as its plan, down to its steps.
		inst.Status.Plans = []v1alpha1.PlanStatus{plan.OnePassStatus(*st, inst.Status.InstalledVersion, rev)}
	}
	if b := r.permissionBlock(inst, err); b != nil {
		// Not a failed attempt: nothing is wrong with the extension.
		return r.stopAt(s, b, nil)
	}
	if err != nil {
		b := remediate.ApplyStop(err)
		// An adoption that fails is retried, never remediated: the
		// objects are the release's, not Annex's to uninstall.
		if b.Kind == blockRetry && remediate.CountsAsFailedAttempt(err) && s.artifact.adoption == nil {
			return r.attemptFailed(ctx, s, b.Reason, b.Message)
		}
		return r.stop(s, b, ctrl.Result{})
	}
	failpoint.Hit(failpoint.AfterObjects, s.owner().String())
	if err := r.recordApplied(ctx, s, rev, set, applied.Inventory); err != nil {
		return ctrl.Result{}, err
	}
	s.inst.Status.AdoptedObjects = applied.Adopted
	r.adopted(s)
	failpoint.Hit(failpoint.AfterEvent, s.owner().String())
	s.observe(applied.Health)
	return ctrl.Result{}, nil
}

// nextRevision describes the revision this reconcile applies
// (record.Next: numbered one above the recorded revision).
func (r *Reconciler) nextRevision(s *scope) v1alpha1.Revision {
	rel := s.artifact.release
	return record.Next(s.inst.Status.History, v1alpha1.Revision{Version: s.choice.Version.Version, ArtifactDigest: s.artifact.digest,
		ValuesDigest: rel.ValuesDigest, ManifestDigest: rel.ManifestDigest, AppliedAt: metav1.NewTime(r.now())})
}

// upToDate reports whether the installed revision was made from this
// reconcile's inputs (record.UpToDate): nothing is applied again.
func upToDate(s *scope) bool {
	return record.UpToDate(s.inst, s.choice.Version.Version, s.artifact.digest, s.artifact.release.ValuesDigest)
}

// withTargetNamespace returns objects with the target namespace in front
// when Annex creates it, unless objects bring that Namespace themselves.
// A chart's plan (Release.OnePass) applies it before anything else, so
// that every hook and object finds its namespace, as with helm install
// --create-namespace.
func (r *Reconciler) withTargetNamespace(ctx context.Context, s *scope, objects []*unstructured.Unstructured, mayCreate bool) []*unstructured.Unstructured {
	if len(target.NamespaceIn(objects, s.targetNamespace())) > 0 {
		return objects
	}
	return slices.Concat(r.createdNamespace(ctx, s, mayCreate), objects)
}

// createdNamespace returns the target namespace, as the one object to
// apply, when Annex creates it (target.CreatesNamespace): an earlier
// revision created it, or, with mayCreate, it does not exist on the
// target cluster. It returns none otherwise.
func (r *Reconciler) createdNamespace(ctx context.Context, s *scope, mayCreate bool) []*unstructured.Unstructured {
	ns := s.targetNamespace()
	created := []*unstructured.Unstructured{target.NamespaceObject(ns)}
	switch recorded, candidate := target.CreatesNamespace(s.inst, ns); {
	case recorded:
		return created
	case !candidate || !mayCreate:
		return nil
	}
	if exists, err := s.target.NamespaceExists(ctx, ns); err == nil && !exists {
		return created
	}
	return nil
}

// recordApplied records rev, whose apply left set with inventory, as the
// installed revision: what left the inventory is pruned first (a failure
// is retried, with s.block saying what), then the records the history no
// longer keeps go, and status.permissions shows set's.
func (r *Reconciler) recordApplied(ctx context.Context, s *scope, rev v1alpha1.Revision, set target.Set, inventory []v1alpha1.ObjectReference) error {
	if _, err := s.target.Applier().Prune(ctx, s.owner(), s.inst.Status.Inventory, inventory); err != nil {
		s.block = retry(v1alpha1.ReasonApplyFailed, fmt.Sprintf("pruning objects that left %s %s: %v", s.inst.Spec.Extension, rev.Version, err))
		return s.block
	}
	if err := r.trimRecords(ctx, s, rev.Number); err != nil {
		return err
	}
	s.showPermissions(set)
	r.record(s, inventory, rev, "")
	return nil
}

// record writes the applied revision into status (record.Install) and
// has the reconcile tell it in an Event when it ends (reason "" picks
// Installed or Upgraded).
func (r *Reconciler) record(s *scope, applied []v1alpha1.ObjectReference, rev v1alpha1.Revision, reason string) {
	reason, msg := record.Install(s.inst, rev, applied, r.historyLimit(), reason)
	s.records.recorded, s.applied.inventory = true, applied
	s.report.applied = &news.Note{Type: corev1.EventTypeNormal, Reason: reason, Message: msg}
}
