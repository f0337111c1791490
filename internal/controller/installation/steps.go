package installation

import (
	"context"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/resolve"
)

// connect finds the target cluster, acting as the installation's
// ServiceAccount if it has one, and observes its Kubernetes version.
// Targets the manager does not allow stop here.
func (r *Reconciler) connect(ctx context.Context, s *scope) (ctrl.Result, error) {
	if b, err := r.checkTargets(ctx, s.inst); err != nil || b != nil {
		return r.stopAt(s, b, err)
	}
	target, err := r.Clusters.Target(ctx, s.inst.Spec.Cluster)
	if err == nil {
		var version string
		version, err = target.KubeVersion(ctx)
		if err == nil {
			acting, b, err := r.actAs(ctx, s.inst, target)
			if err != nil || b != nil {
				return r.stopAt(s, b, err)
			}
			s.target = acting
			s.inst.Status.ClusterVersion = version
			return ctrl.Result{}, nil
		}
	}
	s.block = fleet.Unreachable(s.inst.Spec.Cluster, err)
	return ctrl.Result{}, s.block
}

// checkDependencies waits until every dependency of the chosen version is
// installed, in range and Ready on the same cluster.
func (r *Reconciler) checkDependencies(ctx context.Context, s *scope) (ctrl.Result, error) {
	if len(s.choice.Version.Dependencies) == 0 {
		return ctrl.Result{}, nil
	}
	unmet := resolve.UnmetDependencies(s.inst.Spec.Extension, s.choice.Version, s.presentOthers())
	if len(unmet) == 0 {
		return ctrl.Result{}, nil
	}
	s.block = wait(v1alpha1.ReasonDependencyNotReady, strings.Join(unmet, "; "))
	// Dependencies announce their readiness through the watch on
	// installations; the periodic requeue is a safety net.
	return ctrl.Result{RequeueAfter: 30 * r.pollInterval()}, nil
}

// stopAt records b (or err) as why the installation cannot go on: a wait
// polls, a terminal block stops, a retry or an error backs off.
func (r *Reconciler) stopAt(s *scope, b *block, err error) (ctrl.Result, error) {
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case b.Kind == blockWait:
		return r.stop(s, b, ctrl.Result{RequeueAfter: 30 * r.pollInterval()})
	}
	return r.stop(s, b, ctrl.Result{})
}
