package installation

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/fleet"
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
	t, err := adopt.Plan(ctx, s.target.Applier(), inst, self, fleet.ClusterName(inst.Spec.Cluster), rendered)
	switch b := adopt.Stop(err); {
	case b != nil:
		return r.stop(s, b, ctrl.Result{})
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

// retireAdopted has the tool that installed what was adopted forget it
// (adopt.Retire) once the status recording its adoption is written (so
// that a crash in between leaves a release to adopt again, never an
// installation without either), and notes it in
// status.adoptedFrom.storageRemoved.
func (r *Reconciler) retireAdopted(ctx context.Context, s *scope) (ctrl.Result, error) {
	if from := s.inst.Status.AdoptedFrom; from == nil || from.StorageRemoved || len(s.inst.Status.History) == 0 {
		return ctrl.Result{}, nil
	}
	if err := r.persist(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	// persist decoded the server's answer into the status.
	done, err := adopt.Retire(ctx, s.target.Applier(), s.inst.Status.AdoptedFrom, s.artifact.adoption, s.inst.Status.Inventory)
	if err != nil {
		s.block = retry(v1alpha1.ReasonAdoptionRefused, err.Error())
		return ctrl.Result{}, s.block
	}
	s.inst.Status.AdoptedFrom.StorageRemoved = true
	r.event(s, corev1.EventTypeNormal, done.Reason, done.Message)
	return ctrl.Result{}, nil
}
