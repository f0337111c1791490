package installation

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/values"
)

// runPackage carries out the plans of a package: an abandon request
// first, then a new revision when the inputs changed (its intent recorded
// before anything is applied), then the steps the executor offers, as far
// as they go in this reconcile. When every plan of the revision finished,
// the revision is recorded and what left the set is pruned; when nothing
// runs, drift is checked as for a chart.
func (r *Reconciler) runPackage(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if req := plan.AbandonRequest(inst); req != nil {
		if res, err := r.abandon(ctx, s, req); err != nil || s.block != nil {
			return res, err
		}
	}
	if len(s.artifact.run.plans) > 0 && !resuming(s) {
		if err := r.startRevision(ctx, s); err != nil {
			return ctrl.Result{}, ignoreRefused(err)
		}
	}
	if inst.Status.Pending == nil {
		return r.packageSettled(ctx, s)
	}
	return r.advance(ctx, s)
}

// resuming reports whether the rendered plans are the pending revision's
// (plan.Resumes) and no run request asks for a new run.
func resuming(s *scope) bool {
	return s.artifact.run.request == nil && plan.Resumes(s.inst.Status.Pending, s.choice.Version.Version, s.artifact.digest,
		s.artifact.release.ValuesDigest, s.artifact.run.plans)
}

// startRevision records the intent of a new revision running the plans
// of s.artifact.run (plan.IntentOf): the state they leave is its set,
// and everything they may apply joins the inventory. A revision still
// pending is superseded: its running plan is marked ABANDONED.
func (r *Reconciler) startRevision(ctx context.Context, s *scope) error {
	inst := s.inst
	prev, _, err := r.records(s).Installed(ctx)
	if err != nil {
		return err
	}
	applier, ns, run := s.target.Applier(), s.targetNamespace(), s.artifact.run
	intent, err := plan.IntentOf(run.namespace, prev.Objects, prev.Package, run.plans, run.params, run.cleanup, func(o *unstructured.Unstructured) string {
		return target.RefKey(applier.Refs([]*unstructured.Unstructured{o}, ns)[0])
	})
	if err != nil {
		return err
	}
	rev := r.nextRevision(s)
	rev.Plans, rev.Trigger = plan.Names(s.artifact.run.plans), s.artifact.run.trigger
	rev.ManifestDigest, err = values.ManifestDigest(nil, intent.State)
	if err != nil {
		return err
	}
	if err := r.writeIntentWith(ctx, s, &rev, target.Set{Objects: intent.State, Package: intent.Package}, intent.Everything); err != nil {
		return err
	}
	plan.Begin(&inst.Status.Plans, inst.Status.Pending, rev, s.artifact.run.plans, metav1.NewTime(r.now()))
	inst.Status.Pending = &rev
	if s.artifact.run.request != nil {
		plan.MarkRequest(inst, s.artifact.run.request, nil)
	}
	return r.persist(ctx, s)
}

// advance runs the pending revision's plans with the resumable driver
// (plan.Advance) as far as they go in this reconcile, and says what its
// halt means for the installation.
func (r *Reconciler) advance(ctx context.Context, s *scope) (ctrl.Result, error) {
	rev := *s.inst.Status.Pending
	if b := r.ensureNamespace(ctx, s, s.artifact.run.namespace); b != nil {
		return r.stopAt(s, b, nil)
	}
	halt, p, st, err := plan.Advance(s.artifact.run.plans, rev, &s.inst.Status.Plans, r.planPort(ctx, s))
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case halt == plan.Waits:
		// The Installed condition says what the plan waits for.
		return r.stop(s, wait(plan.WaitingCondition(p, st)), ctrl.Result{RequeueAfter: r.pollInterval()})
	case halt == plan.Stopped:
		return r.revisionStopped(ctx, s, rev, st)
	}
	return r.revisionDone(ctx, s, rev)
}

// planPort is the installation's side of the plan driver: its applier
// runs the tasks (runStep), its status is saved (persist), and Events
// tell when a plan starts and finishes.
type planPort struct {
	ctx context.Context
	r   *Reconciler
	s   *scope
}

func (r *Reconciler) planPort(ctx context.Context, s *scope) planPort {
	return planPort{ctx: ctx, r: r, s: s}
}

func (p planPort) RunStep(step plan.Step) plan.StepResult { return p.r.runStep(p.ctx, p.s, step) }
func (p planPort) Save() error                            { return p.r.persist(p.ctx, p.s) }
func (p planPort) Now() metav1.Time                       { return metav1.NewTime(p.r.now()) }
func (p planPort) Finished(st v1alpha1.PlanStatus)        { p.r.planFinished(p.s, st) }
func (p planPort) Started(pl plan.Plan, st v1alpha1.PlanStatus) {
	p.r.event(p.s, "Normal", "PlanStarted", fmt.Sprintf("plan %s started (revision %d, %s)", pl.Name, st.Revision, st.Trigger))
}

// applyOnePass runs p, a release's one-pass plan (Release.OnePass), with
// the installation's applier in this reconcile (plan.OnePass). It returns
// what the steps applied, the state p ended in (nil when the applier
// refused p before any step) and the first step's error.
func (r *Reconciler) applyOnePass(ctx context.Context, s *scope, p plan.Plan, opts target.ApplyOptions) (target.Applied, *v1alpha1.PlanStatus, error) {
	steps, err := s.target.Applier().Start(s.owner(), s.targetNamespace(), p, opts)
	if err != nil {
		return target.Applied{}, nil, err
	}
	st, stepErr := plan.OnePass(p, func(ref plan.StepRef) error { return steps.Step(ctx, ref) }, func() metav1.Time { return metav1.Now() })
	return steps.Applied(), &st, stepErr
}

// planFinished counts a plan that ended in st and tells it
// (plan.FinishedMessage).
func (r *Reconciler) planFinished(s *scope, st v1alpha1.PlanStatus) {
	metrics.ObservePlan(s.choice.Version.Engine, st)
	eventType := "Normal"
	warning, msg := plan.FinishedMessage(st)
	if warning {
		eventType = "Warning"
	}
	r.event(s, eventType, "PlanFinished", msg)
}

// revisionDone records a revision whose plans all completed and prunes
// what the state they leave no longer holds.
func (r *Reconciler) revisionDone(ctx context.Context, s *scope, rev v1alpha1.Revision) (ctrl.Result, error) {
	inst := s.inst
	set, _, err := r.recordOf(ctx, inst, rev.Number)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.recordApplied(ctx, s, rev, set, s.target.Applier().Refs(set.Objects, s.targetNamespace())); err != nil {
		return ctrl.Result{}, err
	}
	r.adopted(s)
	return ctrl.Result{}, nil
}

// revisionStopped records a revision whose plan stopped (FATAL_ERROR or
// abandoned): Annex does not run its plans again by itself, so the
// revision is recorded as the installed one, with everything its plans
// may have applied still in the inventory, and the Installed condition
// says what stopped and what to do.
func (r *Reconciler) revisionStopped(ctx context.Context, s *scope, rev v1alpha1.Revision, st v1alpha1.PlanStatus) (ctrl.Result, error) {
	inst := s.inst
	if p := plan.Find(s.artifact.run.plans, st.Name); p != nil {
		st.LeftBehind, _ = target.UnionRefs(nil, s.target.Applier().Refs(plan.LeftBehind(*p, st), s.targetNamespace()))
		plan.SetStatus(&inst.Status.Plans, st)
	}
	if err := r.trimRecords(ctx, s, rev.Number); err != nil {
		return ctrl.Result{}, err
	}
	r.record(s, inst.Status.Inventory, rev, "PlanStopped")
	return r.stop(s, terminal(plan.StoppedCondition(st)), ctrl.Result{})
}

// abandon carries out an abandon request: the named plan, if it runs,
// stops where it is.
func (r *Reconciler) abandon(ctx context.Context, s *scope, req *v1alpha1.PlanRequest) (ctrl.Result, error) {
	abandoned := plan.AbandonByRequest(s.inst, req, metav1.NewTime(r.now()))
	if abandoned == nil {
		r.event(s, "Normal", "PlanAbandoned", fmt.Sprintf("request %s: plan %s is not running; nothing to abandon", req.ID, req.Name))
		return ctrl.Result{}, nil
	}
	metrics.ObservePlan(s.choice.Version.Engine, *abandoned)
	r.event(s, "Warning", "PlanAbandoned", fmt.Sprintf("plan %s abandoned by request %s", req.Name, req.ID))
	return r.revisionStopped(ctx, s, *s.inst.Status.Pending, *abandoned)
}

// packageSettled is the reconcile of a package whose plans are finished:
// the Installed condition follows the last revision's plans, and drift is
// checked against the state they left.
func (r *Reconciler) packageSettled(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if len(inst.Status.History) == 0 {
		return ctrl.Result{}, nil
	}
	last := inst.Status.History[0]
	s.applied.inventory = inst.Status.Inventory
	if plan.Unfinished(inst.Status.Plans, last) != nil {
		if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionInstalled); c != nil {
			s.block = terminal(c.Reason, c.Message)
		}
		return ctrl.Result{}, nil
	}
	prev, found, err := r.records(s).Installed(ctx)
	if err != nil || !found {
		return ctrl.Result{}, err
	}
	return r.checkDrift(ctx, s, target.Set{Objects: plan.Driftable(prev.Objects)})
}

// runCleanup runs the installed revision's cleanup plan, if its package
// has one, before the inventory is removed (plan.RunCleanup decides how
// far it goes); done false while it holds the deletion (s.block says why).
func (r *Reconciler) runCleanup(ctx context.Context, s *scope, installed target.Set) (ctrl.Result, bool, error) {
	cleanup := plan.DecodePackageRecord(installed.Package).Cleanup
	if cleanup == nil {
		return ctrl.Result{}, true, nil
	}
	port := &cleanupPort{planPort: r.planPort(ctx, s), namespace: target.NamespaceIn(installed.Objects, s.targetNamespace())}
	out, err := plan.RunCleanup(s.inst, *cleanup, port)
	switch {
	case err != nil || !out.Done && out.Reason == "":
		return port.res, false, err
	case out.Abandoned != nil:
		r.event(s, "Warning", "PlanAbandoned", fmt.Sprintf("plan %s abandoned by request %s; uninstalling goes on", cleanup.Name, out.Abandoned.ID))
	case !out.Done:
		s.block = wait(out.Reason, out.Message)
		return ctrl.Result{RequeueAfter: time.Duration(out.Polls) * r.pollInterval()}, false, nil
	}
	return ctrl.Result{}, true, nil
}

// cleanupPort is planPort for the cleanup plan (plan.CleanupPort): what
// the plan may apply joins the inventory, and the target namespace is
// there before every pass.
type cleanupPort struct {
	planPort
	namespace []*unstructured.Unstructured
	res       ctrl.Result
}

func (p *cleanupPort) Enlist(cleanup plan.Plan) {
	inst := p.s.inst
	inst.Status.Inventory, _ = target.UnionRefs(inst.Status.Inventory, p.s.target.Applier().Refs(plan.AllApplied([]plan.Plan{cleanup}), p.s.targetNamespace()))
	inst.Status.InventoryCount = int32(len(inst.Status.Inventory))
}

func (p *cleanupPort) Prepare() (bool, error) {
	b := p.r.ensureNamespace(p.ctx, p.s, p.namespace)
	if b == nil {
		return true, nil
	}
	p.s.block = b
	if b.Kind == blockRetry {
		return false, b
	}
	p.res = ctrl.Result{RequeueAfter: 30 * p.r.pollInterval()}
	return false, nil
}
