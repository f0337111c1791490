// Package installation reconciles ExtensionInstallations: resolve a version,
// check dependencies, fetch, render, apply, wait until healthy, record — and
// on deletion remove exactly what was applied.
//
// Reconcile (this file) runs the steps in order, one file each:
// resolve.go, steps.go (connect, checkDependencies), verify.go, fetch.go,
// render.go (the chosen version's Engine making its release) with
// choose.go (the plans it runs), adopt.go (spec.adopt), grants.go,
// instances.go (checkScope), gate.go, apply.go, drift.go, health.go,
// storage.go, plans.go (a package's revisions) with execute.go (their
// tasks), remediation.go, records.go, uninstall.go; observe.go records the
// Events, setup.go wires the watches. Their state is the scope
// (scope.go). A step does I/O; what it decides is in a package of its
// own (a pure core, a port for its I/O): the engines'
// contract and how a refused render or fetch stops in internal/engine
// (Refusal) and what they read in internal/enginefacts, the target
// cluster and the drift check in internal/target (CheckDrift), revision
// records in internal/record (Keeper; how revisions are numbered and
// recorded, RefusedStop), plans, their resumable driver, a package's
// revisions (Revise) and the cleanup plan's run in internal/plan,
// adoption in internal/adopt, the gates in their order and what each
// verdict means in internal/gate (Run, Uninstall, Scope), the CRD policy's
// verdict in internal/crdcheck, approvals in internal/approval, hooks in
// internal/hookrequest, signatures in internal/verify (Judge), values
// sources in internal/valuesfrom, tenancy in internal/tenancy, content
// scope, the version taken (Choose) and each cluster's resolution memo in
// internal/resolve, the dependencies among a cluster's installations in
// internal/depend, which events wake which installations in
// internal/wake, which transitions are news in internal/news, what
// follows a failed attempt and how an apply error stops in
// internal/remediate, the uninstall's order and decisions in
// internal/uninstall (uninstall.Run), the health verdict and the summary
// conditions (Ready, Reconciling, Stalled) in internal/readiness.
// interfaces.go lists the controller's interfaces: it never asks which
// engine made a release.
package installation

import (
	"cmp"
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/shard"
	"github.com/annex-platform/annex/internal/wake"
)

// Reconciler installs, upgrades and uninstalls ExtensionInstallations.
type Reconciler struct {
	// Client reads Annex objects (cached) and writes their status.
	Client client.Client
	// Reader reads Secrets and ConfigMaps for valuesFrom without caching
	// every Secret of the hub.
	Reader   client.Reader
	Resolver Resolver
	// Engines fetch and render artifacts, by engine name ("" is
	// v1alpha1.EngineHelm).
	Engines map[v1alpha1.Engine]Engine
	// Verifier checks artifacts against their catalog's signature policy
	// before they are fetched; nil verifies nothing.
	Verifier Verifier
	Clusters Clusters
	// Hooks asks the registered Hooks about each change (required: the
	// hooks gate).
	Hooks  Hooks
	Events events.EventRecorder
	// DefaultServiceAccount is the ServiceAccount, in each installation's
	// namespace, that installations naming none act as (multi-tenant
	// mode); empty: they act as the manager.
	DefaultServiceAccount string
	// RestrictTargets refuses a spec.targetNamespace other than the
	// installation's namespace and any spec.cluster unless the hub admin
	// granted it on the installation's namespace.
	RestrictTargets bool
	// ClusterEvents announces installations to re-resolve because their
	// cluster's Kubernetes version changed; nil when nothing watches.
	ClusterEvents <-chan event.GenericEvent
	// Fence admits the reconciles of installations on the clusters this
	// manager's shard serves; nil admits every one (an unsharded manager
	// that claims nothing).
	Fence Fence

	// Workers is how many installations reconcile at once (default
	// DefaultWorkers).
	Workers int
	// HistoryLimit is how many revisions status keeps (default 10).
	HistoryLimit int
	// HealthPollInterval is how often health is read while waiting
	// (default 2s).
	HealthPollInterval time.Duration
	// ResyncInterval is how often a healthy installation is looked at again
	// (re-resolved, health and drift re-read) when its spec.interval is
	// unset (default 10m).
	ResyncInterval time.Duration
	// Now returns the current time; tests may fix it.
	Now func() time.Time
	// CertificateClock is the time webhook certificates are issued and
	// renewed at (enginefacts.Of.Now); nil means Now. Tests move it ahead to
	// see a certificate renewed.
	CertificateClock func() time.Time

	index *wake.Index          // the cache's installations by cluster; set up by SetupWithManager
	share *shard.Share         // how many reconciles each managed cluster may have at once; set up by SetupWithManager
	memos resolve.ClusterMemos // each cluster's resolution problem between reconciles (resolve.go)
	done  wake.Finalized       // the installations whose uninstall ended here (uninstall.go)
}

// +kubebuilder:rbac:groups=annex.dev,resources=extensioninstallations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=annex.dev,resources=extensioninstallations/status;extensioninstallations/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=extensions;managedclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=annex.dev,resources=catalogs,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets;configmaps;serviceaccounts,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// Applying extensions into the hub cluster needs whatever the extensions
// contain; the manager's ClusterRole for that is config/rbac/extension_applier.yaml.

// Reconcile reads as the table of contents of one installation's life.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	inst := &v1alpha1.ExtensionInstallation{}
	if err := r.Client.Get(ctx, req.NamespacedName, inst); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !inst.DeletionTimestamp.IsZero() && r.done.Has(inst.UID, r.now()) {
		return ctrl.Result{}, nil // a cache that has not seen the finalizer go
	}
	leave, admitted, err := r.enter(ctx, inst)
	if !admitted || err != nil {
		return ctrl.Result{}, err
	}
	defer leave() // after the status is written
	if !r.share.Take(inst.Spec.Cluster) {
		return ctrl.Result{RequeueAfter: shard.ShareWait}, nil
	}
	defer r.share.Give(inst.Spec.Cluster)
	ctx, s := r.begin(ctx, inst)
	defer func() { retErr = r.finish(ctx, s, result, retErr) }()

	if !inst.DeletionTimestamp.IsZero() {
		return r.uninstall(ctx, s)
	}
	if err := r.ensureFinalizer(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if inst.Spec.Suspend {
		s.outcome.suspended = true
		return ctrl.Result{}, nil
	}
	return r.run(ctx, s, []step{
		r.connect,
		r.resolve,
		r.releaseIfUnneeded,
		r.syncOwners,
		r.ensureDependencies,
		r.checkDependencies,
		r.verify,
		r.fetch,
		r.render,
		r.adoptRelease,
		r.scopeGrants,
		r.checkScope,
		r.gate,
		r.apply,
		r.retireAdopted,
		r.waitHealthy,
		r.migrateStorage,
		r.scheduleResync,
	})
}

// enter admits the reconcile when this manager's shard serves the
// installation's cluster (Fence). One that is not admitted does nothing:
// the shard serving the cluster reconciles it, and a shard that starts
// serving a cluster reconciles all its installations (SetupWithManager).
func (r *Reconciler) enter(ctx context.Context, inst *v1alpha1.ExtensionInstallation) (leave func(), admitted bool, err error) {
	if r.Fence == nil {
		return func() {}, true, nil
	}
	return r.Fence.Enter(ctx, inst.Spec.Cluster)
}

// step is one stage of an install or upgrade. A step that cannot go on
// records why in the scope (s.block) and returns its outcome; the steps
// after it do not run.
type step func(ctx context.Context, s *scope) (ctrl.Result, error)

func (r *Reconciler) run(ctx context.Context, s *scope, steps []step) (ctrl.Result, error) {
	for _, st := range steps {
		res, err := st(ctx, s)
		if err != nil || !res.IsZero() || s.block != nil {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// ensureFinalizer adds the uninstall finalizer to an installation that
// lacks it. The API server adds it when it creates an installation
// (policy annex-uninstall-finalizer, config/admission), so this writes
// only for one created before that policy or while it was not bound.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) error {
	if controllerutil.ContainsFinalizer(s.inst, v1alpha1.FinalizerUninstall) {
		return nil
	}
	return r.patchMeta(ctx, s, func() { controllerutil.AddFinalizer(s.inst, v1alpha1.FinalizerUninstall) })
}

// patchMeta changes the installation's metadata (finalizers, owners) in the
// middle of a reconcile. The server's answer would overwrite the status this
// reconcile has computed so far, so that is kept, and the base of the final
// status patch follows the new metadata.
func (r *Reconciler) patchMeta(ctx context.Context, s *scope, mutate func()) error {
	status := *s.inst.Status.DeepCopy()
	patch := client.MergeFrom(s.inst.DeepCopy())
	mutate()
	if err := r.Client.Patch(ctx, s.inst, patch); err != nil {
		return err
	}
	s.written.ObjectMeta = *s.inst.ObjectMeta.DeepCopy()
	s.written.Status = *s.inst.Status.DeepCopy()
	s.inst.Status = status
	return nil
}

// finish writes the status once per reconcile, computed from what the
// steps observed, and turns blocks into the controller-runtime outcome.
func (r *Reconciler) finish(ctx context.Context, s *scope, result ctrl.Result, err error) error {
	if s.outcome.gone {
		r.memos.ForgetIfEmpty(s.inst.Spec.Cluster, r.index.On)
	}
	if s.outcome.gone || s.outcome.stale {
		return err
	}
	summarize(s, err)
	failpoint.Hit(failpoint.BeforeStatus, s.owner().String())
	if statusPatchErr := r.persist(ctx, s); statusPatchErr != nil && !apierrors.IsNotFound(statusPatchErr) {
		return errors.Join(err, statusPatchErr)
	}
	if s.records.recorded {
		if cleanupErr := r.records(s).DeleteSuperseded(ctx); cleanupErr != nil {
			// The records stay until Trim deletes them with the
			// history they fell out of; nothing depends on them any more.
			log.FromContext(ctx).Info("could not delete the records of crashed attempts", "error", cleanupErr.Error())
		}
	}
	r.announce(s)
	if err == nil && s.block != nil && s.block.Kind == blockTerminal {
		return reconcile.TerminalError(s.block)
	}
	if err != nil {
		s.report.log.V(1).Info("reconcile will be retried", "error", err.Error())
	}
	return err
}

// persist patches the status if it changed since the last write.
func (r *Reconciler) persist(ctx context.Context, s *scope) error {
	if equality.Semantic.DeepEqual(s.written.Status, s.inst.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, s.inst, client.MergeFrom(s.written)); err != nil {
		return err
	}
	s.written = s.inst.DeepCopy()
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) pollInterval() time.Duration {
	if r.HealthPollInterval > 0 {
		return r.HealthPollInterval
	}
	return 2 * time.Second
}

// scheduleResync looks at a healthy installation again after the resync
// interval: its health may change without an event Annex watches. An
// operator on its way to a target along its upgrade graph goes on at once.
func (r *Reconciler) scheduleResync(_ context.Context, s *scope) (ctrl.Result, error) {
	switch {
	case s.choice.Target != nil:
		// One hop of an operator upgrade is healthy: take the next.
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	case len(s.artifact.resources) > 0:
		// The custom resources of spec.resources report their own state,
		// which their operator changes at any time: read it more often.
		return ctrl.Result{RequeueAfter: min(cmp.Or(s.inst.Spec.Interval.Duration, ResourcesResyncInterval), ResourcesResyncInterval)}, nil
	case s.inst.Spec.Interval.Duration > 0:
		return ctrl.Result{RequeueAfter: s.inst.Spec.Interval.Duration}, nil
	case r.ResyncInterval > 0:
		return ctrl.Result{RequeueAfter: r.ResyncInterval}, nil
	default:
		return ctrl.Result{RequeueAfter: 10 * time.Minute}, nil
	}
}

// ResourcesResyncInterval is how often, at most, an installation with
// spec.resources is looked at again when healthy.
const ResourcesResyncInterval = 30 * time.Second

func (r *Reconciler) historyLimit() int {
	if r.HistoryLimit > 0 {
		return r.HistoryLimit
	}
	return 10
}
