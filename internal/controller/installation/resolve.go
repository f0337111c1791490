package installation

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/depend"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/resolve"
)

// loadCluster reads the installations on s's cluster and the Extensions.
func (r *Reconciler) loadCluster(ctx context.Context, s *scope) error {
	others, err := r.index.On(s.inst.Spec.Cluster)
	if err != nil {
		return err
	}
	// A read-only view of the cache: copying every Extension on each
	// reconcile would cost more than the rest of it.
	var exts v1alpha1.ExtensionList
	if err := r.Client.List(ctx, &exts, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	st := &depend.Cluster{Extensions: exts.Items, Installations: make([]*v1alpha1.ExtensionInstallation, 0, len(others)+1)}
	self := false
	for _, other := range others {
		if other.Namespace == s.inst.Namespace && other.Name == s.inst.Name {
			other, self = s.inst, true // the freshest copy, with this reconcile's status
		}
		st.Installations = append(st.Installations, other)
	}
	if !self { // the cache has not seen it yet, or has seen it go
		st.Installations = append(st.Installations, s.inst)
	}
	s.cluster = st
	return nil
}

// resolve solves every installation on the cluster together and takes this
// installation's version from the resolution (resolve.Choose): the cluster's memo answers
// when nothing the solve reads changed since it last solved.
func (r *Reconciler) resolve(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.loadCluster(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	memo := r.memos.Of(s.inst.Spec.Cluster)
	state := memo.Refresh(s.cluster.Installations, s.inst)
	s.cluster.Asked = state.Asked()
	provided, err := depend.ProvidedAPIs(ctx, s.target, s.cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.cluster.Provided = provided
	s.cluster.Resolution = memo.Resolve(state, s.inst.Status.ClusterVersion, resolve.CatalogOf(s.cluster.Extensions), provided,
		func(problem resolve.Problem) *resolve.Resolution {
			start := time.Now()
			defer func() { metrics.ObserveResolve(time.Since(start)) }()
			return r.Resolver.Solve(s.cluster.Extensions, problem)
		})
	s.inst.Status.RequiredBy = depend.RequiredBy(s.cluster, s.inst)
	sel, stop, err := resolve.Choose(s.inst, s.cluster.Resolution)
	s.block = stop
	if err != nil || stop != nil {
		return ctrl.Result{}, err
	}
	s.choice = sel
	return ctrl.Result{}, nil
}

// releaseIfUnneeded deletes an installation Annex added for dependencies
// once no installation on the cluster needs it any more; its uninstall then
// runs like any other.
func (r *Reconciler) releaseIfUnneeded(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.inst.Labels[v1alpha1.LabelAddedFor] == "" || len(s.inst.Status.RequiredBy) > 0 {
		return ctrl.Result{}, nil
	}
	r.event(s, "Normal", "Released", fmt.Sprintf("no installation on the cluster needs %s any more; uninstalling it", s.inst.Spec.Extension))
	if err := r.Client.Delete(ctx, s.inst); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	s.block = wait(v1alpha1.ReasonUninstalling, fmt.Sprintf("added for dependencies and no longer needed: uninstalling %s", s.inst.Spec.Extension))
	return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
}

// syncOwners keeps an added dependency owned by the installations in its
// namespace that need it (depend.Owners).
func (r *Reconciler) syncOwners(ctx context.Context, s *scope) (ctrl.Result, error) {
	owners, change := depend.Owners(s.cluster, s.inst)
	if !change {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.patchMeta(ctx, s, func() { s.inst.OwnerReferences = owners })
}

// ensureDependencies creates an installation for every dependency of the
// chosen version that nothing on the cluster installs yet
// (depend.Additions); Annex removes it when the last installation that
// needs it goes.
func (r *Reconciler) ensureDependencies(ctx context.Context, s *scope) (ctrl.Result, error) {
	var created []string
	for _, add := range depend.Additions(s.cluster, s.inst, s.choice.Version, s.targetNamespace()) {
		err := r.Client.Create(ctx, add.Installation)
		switch {
		case apierrors.IsAlreadyExists(err):
			s.block = terminal(v1alpha1.ReasonDependencyNotReady, add.Taken(r.holderOf(ctx, add.Installation)))
			return ctrl.Result{}, nil
		case err != nil:
			return ctrl.Result{}, err
		}
		created = append(created, add.Installation.Name)
	}
	if len(created) > 0 {
		r.event(s, "Normal", "DependenciesAdded", fmt.Sprintf("added installations for %s", strings.Join(created, ", ")))
	}
	return ctrl.Result{}, nil
}

// holderOf reads the installation that holds the name of one Annex
// wanted to add; nil when it cannot.
func (r *Reconciler) holderOf(ctx context.Context, add *v1alpha1.ExtensionInstallation) *v1alpha1.ExtensionInstallation {
	holder := &v1alpha1.ExtensionInstallation{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(add), holder); err != nil {
		return nil
	}
	return holder
}
