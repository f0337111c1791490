package installation

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/depend"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/uninstall"
)

// uninstall removes exactly the inventory from the target cluster, waits
// until it is gone, then releases the finalizer. CRDs stay unless
// spec.uninstall.deleteCRDs is true. The inventory includes what a
// revision that never reached the status may have applied (its record
// says). Once nothing holds the deletion and the cluster is reached, the
// order and its decisions are uninstall.Run's; uninstallPort does its I/O.
func (r *Reconciler) uninstall(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if !controllerutil.ContainsFinalizer(inst, v1alpha1.FinalizerUninstall) {
		s.outcome.gone = true
		return ctrl.Result{}, nil
	}
	if err := r.loadCluster(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	// An operator that requires an API this installation's CRD serves
	// holds it too. A cluster that cannot be reached is reported below.
	if target, err := r.Clusters.Target(ctx, inst.Spec.Cluster); err == nil {
		if s.cluster.Provided, err = depend.ProvidedAPIs(ctx, target, s.cluster); err != nil {
			return ctrl.Result{}, err
		}
	}
	if held := depend.HeldBy(s.cluster, inst); len(held) > 0 {
		s.block = wait(v1alpha1.ReasonDeletionHeld, uninstall.HeldMessage(inst, held))
		return ctrl.Result{RequeueAfter: 30 * r.pollInterval()}, nil
	}
	if gone, err := r.releaseIfNeverApplied(ctx, s); gone || err != nil {
		return ctrl.Result{}, err
	}
	target, err := r.Clusters.Target(ctx, inst.Spec.Cluster)
	if err == nil {
		var b *block
		if target, b, err = r.actAs(ctx, inst, target); b != nil {
			// The ServiceAccount is gone: the objects stay until it is back,
			// or spec.serviceAccountName names another that may delete them.
			return r.stopAt(s, b, nil)
		}
	}
	if err != nil {
		s.block = uninstall.Unreachable(inst, err)
		return ctrl.Result{}, s.block
	}
	installed, haveRecord, err := r.records(s).Uninstalling(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	port := &uninstallPort{ctx: ctx, r: r, s: s, target: target, installed: setOf(installed)}
	h, err := uninstall.Run(uninstall.Input{
		Inst: inst, Installed: port.installed, HaveRecord: haveRecord, Namespace: s.targetNamespace(), Now: r.now(),
	}, port)
	switch {
	case h.Stop != nil:
		s.block = h.Stop
		if s.block.Kind == blockRetry {
			return ctrl.Result{}, s.block
		}
		return ctrl.Result{RequeueAfter: time.Duration(h.Polls) * r.pollInterval()}, nil
	case err != nil:
		return ctrl.Result{}, err
	case h.Done:
		s.outcome.gone = true
	}
	return port.res, nil
}

// uninstallPort is the installation's side of an uninstall
// (uninstall.Run): its hooks, its cleanup plan, the target cluster's
// applier, its records and its finalizer. A step that holds the
// uninstall keeps its result in res.
type uninstallPort struct {
	ctx       context.Context
	r         *Reconciler
	s         *scope
	target    target.Cluster
	installed target.Set
	res       ctrl.Result
}

func (p *uninstallPort) Gate() (done bool, err error) {
	p.res, done, err = p.r.gateUninstall(p.ctx, p.s, p.installed)
	return done, err
}

func (p *uninstallPort) Cleanup() (done bool, err error) {
	p.s.target = p.target
	p.res, done, err = p.r.runCleanup(p.ctx, p.s, p.installed)
	return done, err
}

func (p *uninstallPort) RunDeleteHooks(post bool) error {
	return p.target.Applier().RunDeleteHooks(p.ctx, p.s.owner(), p.s.targetNamespace(), p.installed, post, readiness.TimeoutOf(p.s.inst))
}

func (p *uninstallPort) Delete(refs []v1alpha1.ObjectReference) (int, error) {
	return p.target.Applier().Delete(p.ctx, p.s.owner(), refs, p.s.inst.Spec.Uninstall.DeleteCRDs)
}

func (p *uninstallPort) Forbidden(err error) *news.Stop {
	return p.r.permissionBlock(p.s.inst, err)
}

func (p *uninstallPort) Health(refs []v1alpha1.ObjectReference) (target.Health, error) {
	return p.target.Applier().Health(p.ctx, refs)
}

func (p *uninstallPort) RemoveFinalizers(refs []v1alpha1.ObjectReference) error {
	return p.target.Applier().RemoveFinalizers(p.ctx, p.s.owner(), refs)
}

func (p *uninstallPort) DeleteRecords() error { return p.r.records(p.s).DeleteAll(p.ctx) }

func (p *uninstallPort) Release() (bool, error) {
	err := p.r.patchMeta(p.ctx, p.s, func() { controllerutil.RemoveFinalizer(p.s.inst, v1alpha1.FinalizerUninstall) })
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err == nil {
		p.r.done.Add(p.s.inst.UID, p.r.now())
	}
	return err == nil, err
}

func (p *uninstallPort) Event(eventType, reason, message string) {
	p.r.event(p.s, eventType, reason, message)
}

// releaseIfNeverApplied removes the finalizer of an installation that
// never applied anything: nothing installed (resolve.HasInstalled) and no
// revision record. Its deletion needs nothing from its
// cluster, which may be unreachable or gone. (The API server puts the
// finalizer on every installation it creates, before Annex sees it.)
func (r *Reconciler) releaseIfNeverApplied(ctx context.Context, s *scope) (gone bool, err error) {
	inst := s.inst
	if resolve.HasInstalled(inst) {
		return false, nil
	}
	if any, err := r.records(s).Any(ctx); err != nil || any {
		return false, err
	}
	if err := r.patchMeta(ctx, s, func() { controllerutil.RemoveFinalizer(inst, v1alpha1.FinalizerUninstall) }); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	s.outcome.gone = true
	return true, nil
}
