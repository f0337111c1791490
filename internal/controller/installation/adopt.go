package installation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
)

// Adoption (spec.adopt): the first install of an installation that names
// a Helm release or an OLM operator takes its objects over in place
// instead of creating them. internal/adopt decides (adopt.Plan, the
// Takeover); these steps run it:
//
//   - adoptRelease (after render) has adopt.Plan read the release (or
//     the Subscription and its CSV) on the target cluster and check it
//     against the render; a refusal is a condition saying what to do.
//   - apply then applies the render without its Helm hooks (they ran when
//     Helm installed the release) and with the Takeover's hand-over
//     (ApplyOptions.Adopting): each object keeps its UID; one that matches the render
//     is not written at all — status.adoptedObjects lists it, the
//     installation owns it by UID (Owner.Adopted), and the first revision
//     or drift correction that changes it claims it; one that differs is
//     claimed and corrected at once. Revision 1's record keeps the
//     release's last manifest; status.adoptedFrom says where the
//     installation came from (adopted).
//   - retireAdopted (after apply), once the status recording revision 1 is
//     written, deletes the release's storage (or takes the operator from
//     OLM), so that the old tool no longer knows it.
//
// The installation pins nothing itself: annexctl adopt helm writes the
// chart's version and the release's values into the spec.

// adopting reports whether inst adopts a Helm release on its first
// install (adopt.Adopting).
func adopting(inst *v1alpha1.ExtensionInstallation) bool { return adopt.Adopting(inst) }

// adoptRelease reads and checks what spec.adopt names, before anything is
// written (see the top of this file).
func (r *Reconciler) adoptRelease(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if !adopt.Adopting(inst) && !adopt.AdoptingOperator(inst) {
		return ctrl.Result{}, nil
	}
	self := adopt.Installation{
		Extension: inst.Spec.Extension, Version: s.choice.Version.Version, TargetNamespace: s.targetNamespace(),
		Name: inst.Name, Namespace: inst.Namespace,
	}
	rendered := adopt.Rendered{
		Objects:   slices.Concat(s.artifact.release.CRDs, s.artifact.release.Objects),
		Resumable: s.artifact.release.Resumable(),
	}
	t, err := adopt.Plan(ctx, s.target.Applier(), inst, self, clusterName(inst.Spec.Cluster), rendered)
	var no *adopt.Refusal
	switch {
	case errors.As(err, &no) && no.Retry:
		return r.stop(s, retry(v1alpha1.ReasonAdoptionRefused, no.Message), ctrl.Result{})
	case errors.As(err, &no):
		return r.stop(s, terminal(v1alpha1.ReasonAdoptionRefused, no.Message), ctrl.Result{})
	case err != nil:
		return ctrl.Result{}, err
	}
	s.artifact.adoption = t
	return ctrl.Result{}, nil
}

// adoptedByOthers maps the UIDs of the objects that the other
// installations on s's cluster adopted without writing them to those
// installations, for Owner (adopt.AdoptedByOthers).
func (s *scope) adoptedByOthers() map[types.UID]string {
	if s.cluster == nil {
		return nil
	}
	return adopt.AdoptedByOthers(s.cluster.Installations, types.NamespacedName{Namespace: s.inst.Namespace, Name: s.inst.Name})
}

// adopted notes in the status that the revision just recorded adopted
// what s's Takeover names, and tells it in an Event.
func (r *Reconciler) adopted(s *scope) {
	t := s.artifact.adoption
	if t == nil {
		return
	}
	s.inst.Status.AdoptedFrom = t.From(metav1.NewTime(r.now()))
	r.event(s, corev1.EventTypeNormal, "Adopted", t.News())
}

// retireAdopted deletes the storage of the adopted Helm release once the
// status recording its adoption is written (so that a crash in between
// leaves a release to adopt again, never an installation without either),
// and notes it in status.adoptedFrom.storageRemoved.
func (r *Reconciler) retireAdopted(ctx context.Context, s *scope) (ctrl.Result, error) {
	from := s.inst.Status.AdoptedFrom
	if from == nil || from.StorageRemoved || len(s.inst.Status.History) == 0 {
		return ctrl.Result{}, nil
	}
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if from.Kind == adopt.KindSubscription {
		return r.retireOperator(ctx, s)
	}
	ns := cmp.Or(from.StorageNamespace, from.Namespace)
	n, err := s.target.Applier().RetireHelmRelease(ctx, ns, from.Name)
	if err != nil {
		s.block = retry(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf("deleting the storage of adopted Helm release %s/%s: %v", ns, from.Name, err))
		return ctrl.Result{}, s.block
	}
	// persist decoded the server's answer into the status: from is stale.
	s.inst.Status.AdoptedFrom.StorageRemoved = true
	r.event(s, corev1.EventTypeNormal, "HelmReleaseRetired", fmt.Sprintf(
		"deleted the storage of Helm release %s/%s (%d objects): helm list no longer shows it; its last manifest is in the record of revision 1", ns, from.Name, n))
	return ctrl.Result{}, nil
}

// retireOperator, once revision 1 of an adopted OLM operator is
// recorded, takes the operator's objects from OLM (their ownerReferences
// to the CSV and OLM's olm.owner labels go) and then deletes the
// Subscription, its InstallPlans and the CSV, so that OLM neither
// removes nor reinstalls the operator; its custom resources are not
// touched. It notes it in status.adoptedFrom.storageRemoved.
func (r *Reconciler) retireOperator(ctx context.Context, s *scope) (ctrl.Result, error) {
	from := s.inst.Status.AdoptedFrom
	op := &adopt.Operator{Subscription: from.Name, Namespace: from.Namespace, CSV: from.ClusterServiceVersion}
	if t := s.artifact.adoption; t != nil && t.Operator != nil {
		op = t.Operator
	}
	n, err := s.target.Applier().RetireOLMOperator(ctx, op, s.inst.Status.Inventory)
	if err != nil {
		s.block = retry(v1alpha1.ReasonAdoptionRefused, fmt.Sprintf("taking operator %s over from OLM (Subscription %s/%s, ClusterServiceVersion %s): %v",
			from.Chart, op.Namespace, op.Subscription, op.CSV, err))
		return ctrl.Result{}, s.block
	}
	s.inst.Status.AdoptedFrom.StorageRemoved = true
	r.event(s, corev1.EventTypeNormal, "OLMRetired", fmt.Sprintf(
		"removed the ownerReferences to ClusterServiceVersion %s/%s from %d objects, then deleted Subscription %s/%s, its InstallPlans and the CSV: OLM no longer manages operator %s; its custom resources are untouched",
		op.Namespace, op.CSV, n, op.Namespace, op.Subscription, from.Chart))
	return ctrl.Result{}, nil
}
