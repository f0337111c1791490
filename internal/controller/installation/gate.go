package installation

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/approval"
	"github.com/annex-platform/annex/internal/crdcheck"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/wake"
)

// +kubebuilder:rbac:groups=annex.dev,resources=approvalpolicies;approvals,verbs=get;list;watch
// +kubebuilder:rbac:groups=annex.dev,resources=hooks,verbs=get;list;watch
// +kubebuilder:rbac:groups=annex.dev,resources=hookrequests,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=annex.dev,resources=hookrequests/status,verbs=get;update;patch
// Hooks' resources are of any kind: on the hub the manager holds the
// extension applier's cluster-admin binding (config/rbac/extension_applier.yaml),
// which covers creating, reading and watching them; a narrowed
// deployment must grant create, get, list and watch on every Hook kind.

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

// gate runs, for the pending change, what must agree before it touches
// the cluster (gate.Run: the gates, their order, their verdicts, and
// status.change and status.crdChanges); a gate that does not agree
// blocks (s.block). gatePort reads and asks for them.
func (r *Reconciler) gate(ctx context.Context, s *scope) (ctrl.Result, error) {
	c, err := r.pendingChange(s)
	if err != nil {
		return ctrl.Result{}, err
	}
	in := gate.Input{Inst: s.inst, Change: c, Version: s.choice.Version.Version, Namespace: s.targetNamespace(), Applies: s.artifact.toApply()}
	if s.artifact.release != nil {
		in.Warnings = s.artifact.release.Warnings
	}
	if c != nil && s.artifact.release.Resumable() && s.artifact.run.cleanup != nil {
		in.Cleanup = plan.AllApplied([]plan.Plan{*s.artifact.run.cleanup})
	}
	out, err := gate.Run(in, r.gatePort(ctx, s))
	return r.gated(s, out, err)
}

// gated is the reconcile's outcome of the gates: the CRDs they keep are
// applied in place of the release's, and their stop becomes the block.
func (r *Reconciler) gated(s *scope, out gate.Outcome, err error) (ctrl.Result, error) {
	s.keepCRDs(out.Keep)
	if out.Stop != nil {
		s.block = out.Stop
		if s.block.Kind == blockRetry {
			return ctrl.Result{}, s.block
		}
	}
	return ctrl.Result{RequeueAfter: out.RequeueAfter}, err
}

// gateUninstall runs the PreUninstall hooks before an uninstall deletes
// anything, over installed, the installed revision's objects
// (gate.Uninstall). It returns done false while they hold the uninstall
// (s.block says why).
func (r *Reconciler) gateUninstall(ctx context.Context, s *scope, installed target.Set) (ctrl.Result, bool, error) {
	out, done, err := gate.Uninstall(s.inst, slices.Concat(installed.CRDs, installed.Objects), s.targetNamespace(), r.gatePort(ctx, s))
	res, err := r.gated(s, out, err)
	return res, done, err
}

// gatePort is the installation's side of the gates: its records, its
// target cluster, the approvals of the hub, its Hooks and its Events.
type gatePort struct {
	ctx context.Context
	r   *Reconciler
	s   *scope
}

func (r *Reconciler) gatePort(ctx context.Context, s *scope) gatePort {
	return gatePort{ctx: ctx, r: r, s: s}
}

func (p gatePort) Installed() ([]*unstructured.Unstructured, error) {
	installed, _, err := p.r.records(p.s).Installed(p.ctx)
	return slices.Concat(installed.CRDs, installed.Objects), err
}

func (p gatePort) Serves(gvk schema.GroupVersionKind) (kubeapis.Answer, error) {
	return p.s.target.Serves(p.ctx, gvk)
}

func (p gatePort) CRDs(names []string) (map[string]*unstructured.Unstructured, error) {
	return p.s.target.CRDs(p.ctx, names)
}

func (p gatePort) Approval(c *gate.Pending, permissionsGrow []string) (*v1alpha1.ChangeApproval, error) {
	return approval.Check(p.ctx, p.r.Client, p.s.inst, approval.Change{
		From: c.From, To: c.To, Digest: c.Digest, PermissionsGrow: permissionsGrow, Objects: c.Objects, Installed: p.Installed,
	})
}

func (p gatePort) AskHooks(c gate.HookChange) (gate.HookOutcome, error) {
	return p.r.Hooks.Ask(p.ctx, c)
}
func (p gatePort) Event(eventType, reason, message string) {
	p.r.event(p.s, eventType, reason, message)
}
func (p gatePort) Now() time.Time { return p.r.now() }

// keepCRDs has this reconcile apply the kept CRDs in place of the
// release's: in a chart's CRDs and objects, and in the Apply tasks of the
// plans this reconcile runs.
func (s *scope) keepCRDs(keep map[string]*unstructured.Unstructured) {
	if len(keep) == 0 {
		return
	}
	if s.artifact.run != nil {
		s.artifact.run.plans = plan.RewriteApplies(s.artifact.run.plans, func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			return crdcheck.WithKept(objs, keep)
		})
	}
	if s.artifact.release != nil {
		kept := *s.artifact.release
		kept.CRDs, kept.Objects = crdcheck.WithKept(kept.CRDs, keep), crdcheck.WithKept(kept.Objects, keep)
		s.artifact.release = &kept
	}
}

// showPermissions sets status.permissions from set, the objects of the
// revision being recorded.
func (s *scope) showPermissions(set target.Set) {
	s.inst.Status.Permissions = gate.Summarize(gate.Derive(slices.Concat(set.CRDs, set.Objects), s.targetNamespace())).Status()
}

// watchHooks adds the hooks' watches to the installation controller: a
// deleted HookRequest (asking the hooks again), and any change of a Hook
// (deleted, its kind now served) for the installations whose change
// waits on hooks.
func (r *Reconciler) watchHooks(b *builder.Builder) *builder.Builder {
	return b.
		Owns(&v1alpha1.HookRequest{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		Watches(&v1alpha1.Hook{}, handler.EnqueueRequestsFromMapFunc(wake.WaitingOnHooks(r.Client)))
}
