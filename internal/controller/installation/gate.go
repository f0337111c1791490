package installation

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/target"
)

// pendingChange returns the change this reconcile would apply, or nil
// when it would apply none.
func (r *Reconciler) pendingChange(s *scope) (*gate.Pending, error) {
	a, trigger := s.artifact, ""
	objs := a.toApply()
	switch {
	case a.release.Resumable():
		if len(a.run.plans) == 0 || resuming(s) {
			return nil, nil
		}
		objs, trigger = slices.Concat(a.run.namespace, objs), a.run.trigger
	case a.release == nil || isFailedTarget(s) || upToDate(s):
		return nil, nil
	}
	return gate.NewPending(s.inst.Status.InstalledVersion, s.choice.Version.Version, a.digest, a.release.ValuesDigest,
		s.inst.Status.ClusterVersion, trigger, objs)
}

// gate runs, for a change, what must agree before it touches the
// cluster, in order. A gate that does not agree blocks (s.block): the
// change waits, and status.change shows it with what each gate said.
// When every gate agrees the change goes on in this reconcile and
// status.change is cleared.
func (r *Reconciler) gate(ctx context.Context, s *scope) (ctrl.Result, error) {
	c, err := r.pendingChange(s)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.change = c
	if c == nil {
		s.inst.Status.Change = nil
		if err := r.keepInstalledCRDs(ctx, s); err != nil {
			s.block = retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf("reading the CustomResourceDefinitions installed on %s: %v", fleet.ClusterName(s.inst.Spec.Cluster), err))
			return ctrl.Result{}, s.block
		}
		return ctrl.Result{}, nil
	}
	res, err := r.run(ctx, s, []step{
		r.describeChange,
		r.checkServed,
		r.checkCRDs,
		r.requireApproval,
		r.runHooks,
	})
	if err == nil && s.block == nil {
		s.inst.Status.Change = nil
	}
	return res, err
}

// describeChange shows the change in status.change: its versions, its
// digest, and how the permissions of the extension's objects change
// (internal/gate) against the installed revision's.
func (r *Reconciler) describeChange(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.change
	installed, _, err := r.records(s).Installed(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	ns := s.targetNamespace()
	diff := gate.Diff(gate.Derive(slices.Concat(installed.CRDs, installed.Objects), ns), gate.Derive(c.Objects, ns))
	s.inst.Status.Change = gate.Describe(c, diff, s.inst.Status.Artifact, s.inst.Status.Change)
	return ctrl.Result{}, nil
}

// checkServed refuses a change the target cluster cannot take, before
// any other gate asks anyone and before anything is applied: every object
// the change may apply (hooks, every plan's objects, the cleanup plan's)
// must be of a kind the cluster serves in the object's apiVersion, or of
// a kind a CRD of the change defines in a version that CRD serves.
// Otherwise the change stops with a terminal block naming each object,
// its apiVersion, what the cluster serves instead, and, for an API
// Kubernetes removed (kubeapis.Removals), the release that removed it and
// its replacement: a removed API never comes back, so retrying cannot
// help. A new spec, a new Kubernetes version or another installation on
// the cluster changing wakes the installation to check again.
func (r *Reconciler) checkServed(ctx context.Context, s *scope) (ctrl.Result, error) {
	objs := s.change.Objects
	if s.artifact.release.Resumable() && s.artifact.run.cleanup != nil {
		objs = slices.Concat(objs, plan.AllApplied([]plan.Plan{*s.artifact.run.cleanup}))
	}
	unserved, err := kubeapis.Check(objs, s.targetNamespace(), func(gvk schema.GroupVersionKind) (kubeapis.Answer, error) { return s.target.Serves(ctx, gvk) })
	if err != nil {
		s.block = retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf("reading the API kinds %s serves: %v", fleet.ClusterName(s.inst.Spec.Cluster), err))
		return ctrl.Result{}, s.block
	}
	if len(unserved) > 0 {
		s.block = terminal(v1alpha1.ReasonKindNotServed, kubeapis.UnservedMessage(
			s.inst.Spec.Extension, s.choice.Version.Version, fleet.ClusterName(s.inst.Spec.Cluster), s.inst.Status.ClusterVersion, unserved))
	}
	return ctrl.Result{}, nil
}

// showPermissions sets status.permissions from set, the objects of the
// revision being recorded.
func (s *scope) showPermissions(set target.Set) {
	s.inst.Status.Permissions = gate.Summarize(gate.Derive(slices.Concat(set.CRDs, set.Objects), s.targetNamespace())).Status()
}
