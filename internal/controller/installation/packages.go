package installation

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine/pkg"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/render"
)

// release is what the package engine made of this reconcile's inputs: the
// effective package (after extends), its parameters, and the plans the
// change runs, rendered.
type release struct {
	pkg    *pkg.Package
	params map[string]any
	// plans run in this order; empty when nothing changed.
	plans   []plan.Plan
	trigger string
	// request is the spec.plans.run request these plans carry out, if any.
	request *v1alpha1.PlanRequest
	// cleanup is the rendered cleanup plan, kept in the record for the
	// uninstall; nil when the package has none.
	cleanup *plan.Plan
	// namespace holds the target namespace when Annex creates it (it does
	// not exist on the target cluster, or an earlier revision created it):
	// applied before the plans' first step on every pass, recorded, removed
	// on uninstall.
	namespace []*unstructured.Unstructured
	warnings  []string
}

// packageRecord is the package engine's part of a revision record.
type packageRecord struct {
	// Params are the effective parameters of the revision.
	Params map[string]any `json:"params,omitempty"`
	// Cleanup is the cleanup plan rendered with Params.
	Cleanup *plan.Plan `json:"cleanup,omitempty"`
	// AppliedBy maps each object of the set (refKey) to the plan that last
	// applied it, so that a plan that stops applying an object prunes it.
	AppliedBy map[string]string `json:"appliedBy,omitempty"`
}

// maxExtendsDepth bounds an extends chain (and breaks cycles).
const maxExtendsDepth = 5

// isPackage reports whether the chosen version is an Annex package.
func isPackage(s *scope) bool { return s.choice.Version.Engine == v1alpha1.EnginePackage }

// renderPackage loads the package and its bases, merges them, validates
// the parameters, decides which plans this change runs, and renders them.
// Invalid parameters and broken packages stop here, before anything is
// applied.
func (r *Reconciler) renderPackage(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	values, b, err := r.composeValues(ctx, inst)
	if err != nil {
		return ctrl.Result{}, err
	}
	if b != nil {
		return r.stop(s, b, ctrl.Result{RequeueAfter: 30 * r.pollInterval()})
	}
	effective, digest, b, err := r.loadPackage(ctx, s)
	if err != nil || b != nil {
		if b != nil {
			return r.stop(s, b, ctrl.Result{})
		}
		return ctrl.Result{}, err
	}
	s.artifactDigest = digest
	listPlans(inst, effective)
	prev, err := r.installedState(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	installed := decodePackageRecord(prev.pkg)
	params, err := pkg.Resolve(effective, values, installed.Params)
	if err != nil {
		return r.stop(s, terminal(v1alpha1.ReasonValuesInvalid, fmt.Sprintf("spec.values: %v; see %s %s params.yaml",
			err, inst.Spec.Extension, s.choice.Version.Version)), ctrl.Result{})
	}
	rel := &release{pkg: effective, params: params, warnings: s.mergeWarnings}
	valuesDigest, err := render.DigestOf(withScopedGrants(inst, params))
	if err != nil {
		return ctrl.Result{}, err
	}
	s.rendered = &render.Result{ValuesDigest: valuesDigest}
	names, trigger, request := r.choosePlans(s, effective, installed.Params, params, valuesDigest)
	rel.trigger, rel.request = trigger, request
	in := pkg.Input{Instance: inst.Name, Namespace: s.targetNamespace(), Params: params, KubeVersion: inst.Status.ClusterVersion}
	start := time.Now()
	for _, name := range names {
		p, warnings, err := pkg.RenderPlan(effective, name, in)
		if err != nil {
			return r.stop(s, terminal(v1alpha1.ReasonRenderFailed, fmt.Sprintf("%s %s: plan %s does not render: %v; fix spec.values or choose another version",
				inst.Spec.Extension, s.choice.Version.Version, name, err)), ctrl.Result{})
		}
		rel.plans = append(rel.plans, p)
		rel.warnings = append(rel.warnings, warnings...)
	}
	metrics.ObserveRender(v1alpha1.EnginePackage, time.Since(start))
	if _, ok := effective.Operator.Plans[pkg.PlanCleanup]; ok {
		if p, _, err := pkg.RenderPlan(effective, pkg.PlanCleanup, in); err == nil {
			rel.cleanup = &p
		} else {
			rel.warnings = append(rel.warnings, fmt.Sprintf("plan cleanup does not render (%v): it will not run on uninstall", err))
		}
	}
	s.release = rel
	// A plan that resumes creates only the namespace its revision
	// recorded: what Annex applies is recorded first.
	rel.namespace = r.createdNamespace(ctx, s, len(names) > 0 && !resuming(s))
	if len(rel.warnings) > 0 {
		setCondition(inst, v1alpha1.ConditionWarnings, metav1.ConditionTrue, "PackageWarnings", strings.Join(rel.warnings, "; "))
	} else {
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionWarnings)
	}
	return ctrl.Result{}, nil
}

// stop sets a block that keeps the installation from being applied, with
// the Installed condition saying why.
func (r *Reconciler) stop(s *scope, b *block, res ctrl.Result) (ctrl.Result, error) {
	s.block = b
	setCondition(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, b.reason, b.message)
	if b.kind == blockRetry {
		return ctrl.Result{}, b
	}
	return res, nil
}

// loadPackage reads the chosen version's package and, through its extends
// chain, the bases it builds on, and merges them. The digest covers every
// archive of the chain, so that a new base version within the range is a
// new input.
func (r *Reconciler) loadPackage(ctx context.Context, s *scope) (*pkg.Package, string, *block, error) {
	ref := fmt.Sprintf("%s %s", s.inst.Spec.Extension, s.choice.Version.Version)
	top, err := pkg.LoadArchive(s.archive)
	if err != nil {
		return nil, "", terminal(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: the artifact is not a valid package: %v; fix the package in its catalog or choose another version", ref, err)), nil
	}
	chain := []*pkg.Package{top}
	digests := []string{s.artifactDigest}
	for ext := top.Operator.Extends; ext != nil; ext = chain[0].Operator.Extends {
		if len(chain) > maxExtendsDepth {
			return nil, "", terminal(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: the extends chain is longer than %d packages (or a cycle); shorten it", ref, maxExtendsDepth)), nil
		}
		name := cmp.Or(ext.Operator, ext.Name)
		version, b := chooseBase(s.cluster.extensions, name, ext.Version)
		if b != nil {
			return nil, "", b, nil
		}
		data, err := r.Fetcher.FetchArtifact(ctx, version.Source)
		if err != nil {
			return nil, "", retry(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s extends %s %s: fetching it: %v", ref, name, version.Version, err)), nil
		}
		base, err := pkg.LoadArchive(data)
		if err != nil {
			return nil, "", terminal(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s extends %s %s, which is not a valid package: %v", ref, name, version.Version, err)), nil
		}
		chain = append([]*pkg.Package{base}, chain...)
		digests = append(digests, digestOf(data))
	}
	merged, warnings, err := pkg.MergeChain(chain)
	if err != nil {
		return nil, "", terminal(v1alpha1.ReasonRenderFailed, fmt.Sprintf("%s: extends: %v", ref, err)), nil
	}
	s.mergeWarnings = warnings
	if len(digests) == 1 {
		return merged, digests[0], nil, nil
	}
	return merged, digestOf([]byte(strings.Join(digests, ","))), nil, nil
}

// chooseBase picks the highest version of extension name whose version,
// or failing that appVersion, is in versionRange (KEP-0012's own example
// names the base's appVersion).
func chooseBase(extensions []v1alpha1.Extension, name, versionRange string) (*v1alpha1.ExtensionVersion, *block) {
	constraint, err := semver.NewConstraint(cmp.Or(versionRange, "*"))
	if err != nil {
		return nil, terminal(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("extends: version %q of %s is not a version range: %v", versionRange, name, err))
	}
	matches := func(v string) bool {
		sv, err := semver.NewVersion(v)
		return err == nil && constraint.Check(sv)
	}
	for i := range extensions {
		if extensions[i].Name != name {
			continue
		}
		versions := extensions[i].Spec.Versions // highest first
		for j := range versions {
			if matches(versions[j].Version) {
				return &versions[j], nil
			}
		}
		for j := range versions {
			if versions[j].AppVersion != "" && matches(versions[j].AppVersion) {
				return &versions[j], nil
			}
		}
		return nil, wait(v1alpha1.ReasonBaseNotFound, fmt.Sprintf(
			"extends: no version of %s matches %q (by version or appVersion); the catalogs offer %s", name, versionRange, versionList(versions)))
	}
	return nil, wait(v1alpha1.ReasonBaseNotFound, fmt.Sprintf(
		"extends: base package %s is in no catalog; add a Catalog that serves it", name))
}

func versionList(versions []v1alpha1.ExtensionVersion) string {
	out := make([]string, 0, len(versions))
	for _, v := range versions {
		out = append(out, v.Version)
	}
	return strings.Join(out, ", ")
}

// choosePlans decides which plans this reconcile's inputs run, as KUDO
// users expect: install → deploy; upgrade (a new version, or new content
// of the same version, such as a new base within the extends range) →
// upgrade, else update, else deploy; changed parameters → their triggers
// in params.yaml order, else update, else deploy. Unchanged inputs run
// nothing, unless spec.plans.run asks for a plan. A change while a plan
// runs is compared with the last recorded revision, so the running plan's
// unfinished work is part of it; the running plan is superseded.
func (r *Reconciler) choosePlans(s *scope, p *pkg.Package, installed, params map[string]any, valuesDigest string) ([]string, string, *v1alpha1.PlanRequest) {
	inst := s.inst
	version := s.choice.Version.Version
	if pending := inst.Status.Pending; pending != nil && pending.Version == version &&
		pending.ArtifactDigest == s.artifactDigest && pending.ValuesDigest == valuesDigest {
		return pending.Plans, pending.Trigger, nil // resume
	}
	if len(inst.Status.History) == 0 {
		plans, trigger := pkg.SelectPlans(p, pkg.Change{Install: true})
		return plans, trigger, nil
	}
	last := inst.Status.History[0]
	upgrade := last.Version != version || last.ArtifactDigest != s.artifactDigest
	changed := pkg.Changed(p, installed, params)
	if !upgrade && len(changed) == 0 && last.ValuesDigest == valuesDigest {
		if pending := inst.Status.Pending; pending != nil {
			// Back to the recorded inputs while a revision for others ran:
			// its plans run again with these inputs, putting back what it
			// changed.
			return pending.Plans, fmt.Sprintf("back to the inputs of revision %d", last.Number), nil
		}
		if req := newRunRequest(inst); req != nil {
			return []string{req.Name}, "requested (" + req.ID + ")", req
		}
		return nil, "", nil
	}
	plans, trigger := pkg.SelectPlans(p, pkg.Change{Upgrade: upgrade, Changed: changed})
	if upgrade && last.Version != version {
		trigger = fmt.Sprintf("upgrade %s → %s", last.Version, version)
	} else if upgrade && len(changed) == 0 {
		trigger = "new content of " + version
		if s.choice.Version.Extends != nil {
			trigger = "new content of " + version + " (a new base version)"
		}
	}
	if len(plans) == 0 {
		plans = []string{firstPlan(p, pkg.PlanUpdate, pkg.PlanDeploy)}
	}
	return plans, trigger, nil
}

// firstPlan returns the first of names the package has.
func firstPlan(p *pkg.Package, names ...string) string {
	for _, n := range names {
		if _, ok := p.Operator.Plans[n]; ok {
			return n
		}
	}
	return names[len(names)-1]
}

// newRunRequest returns spec.plans.run when it has not been carried out.
func newRunRequest(inst *v1alpha1.ExtensionInstallation) *v1alpha1.PlanRequest {
	if inst.Spec.Plans == nil || inst.Spec.Plans.Run == nil {
		return nil
	}
	req := inst.Spec.Plans.Run
	if done := inst.Status.PlanRequests; done != nil && done.Run != nil && *done.Run == *req {
		return nil
	}
	return req
}

// newAbandonRequest returns spec.plans.abandon when it has not been
// carried out.
func newAbandonRequest(inst *v1alpha1.ExtensionInstallation) *v1alpha1.PlanRequest {
	if inst.Spec.Plans == nil || inst.Spec.Plans.Abandon == nil {
		return nil
	}
	req := inst.Spec.Plans.Abandon
	if done := inst.Status.PlanRequests; done != nil && done.Abandon != nil && *done.Abandon == *req {
		return nil
	}
	return req
}

// markRequest records that a plan request was carried out.
func markRequest(inst *v1alpha1.ExtensionInstallation, run, abandon *v1alpha1.PlanRequest) {
	if inst.Status.PlanRequests == nil {
		inst.Status.PlanRequests = &v1alpha1.PlanRequests{}
	}
	if run != nil {
		inst.Status.PlanRequests.Run = run.DeepCopy()
	}
	if abandon != nil {
		inst.Status.PlanRequests.Abandon = abandon.DeepCopy()
	}
}

func decodePackageRecord(data []byte) packageRecord {
	var rec packageRecord
	if len(data) > 0 {
		_ = json.Unmarshal(data, &rec) // a record without it is a chart's
	}
	return rec
}

// runPackage carries out the plans of a package: an abandon request
// first, then a new revision when the inputs changed (its intent recorded
// before anything is applied), then the steps the executor offers, as far
// as they go in this reconcile. When every plan of the revision finished,
// the revision is recorded and what left the set is pruned; when nothing
// runs, drift is checked as for a chart.
func (r *Reconciler) runPackage(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if req := newAbandonRequest(inst); req != nil {
		if res, err := r.abandon(ctx, s, req); err != nil || s.block != nil {
			return res, err
		}
	}
	if len(s.release.plans) > 0 && !resuming(s) {
		if err := r.startRevision(ctx, s); err != nil {
			return ctrl.Result{}, ignoreRefused(err)
		}
	}
	if inst.Status.Pending == nil {
		return r.packageSettled(ctx, s)
	}
	return r.advance(ctx, s)
}

// resuming reports whether the rendered plans are the pending revision's.
func resuming(s *scope) bool {
	p := s.inst.Status.Pending
	return p != nil && p.Version == s.choice.Version.Version && p.ArtifactDigest == s.artifactDigest &&
		p.ValuesDigest == s.rendered.ValuesDigest && s.release.request == nil && slices.Equal(p.Plans, planNames(s.release.plans))
}

func planNames(plans []plan.Plan) []string {
	out := make([]string, len(plans))
	for i, p := range plans {
		out[i] = p.Name
	}
	return out
}

// startRevision records the intent of a new revision running s.release's
// plans: the state they leave (the last revision's set, changed by what
// the plans apply and delete) and everything they may apply joins the
// inventory. A revision still pending is superseded: its running plan is
// marked ABANDONED.
func (r *Reconciler) startRevision(ctx context.Context, s *scope) error {
	inst := s.inst
	prev, err := r.installedState(ctx, s)
	if err != nil {
		return err
	}
	desired, appliedBy := stateAfter(slices.Concat(s.release.namespace, prev.objects), decodePackageRecord(prev.pkg).AppliedBy,
		s.release.plans, s.target.Applier(), s.targetNamespace())
	extra, err := json.Marshal(packageRecord{Params: s.release.params, Cleanup: s.release.cleanup, AppliedBy: appliedBy})
	if err != nil {
		return err
	}
	everything := slices.Concat(desired, allApplied(s.release.plans))
	rev := r.nextRevision(s)
	rev.Plans, rev.Trigger = planNames(s.release.plans), s.release.trigger
	rev.ManifestDigest, err = render.ManifestDigestOf(desired)
	if err != nil {
		return err
	}
	// The record holds the state the plans leave; its inventory is all
	// the plans may apply, so that a crash at any step leaves nothing
	// unowned.
	if err := r.writeIntentWith(ctx, s, &rev, Set{Objects: desired, Package: extra}, everything); err != nil {
		return err
	}
	now := metav1.NewTime(r.now())
	if old := inst.Status.Pending; old != nil {
		for _, name := range old.Plans {
			if st := planStatus(inst, name); st != nil && plan.Running(st.State) {
				setPlanStatus(inst, plan.Abandon(*st, fmt.Sprintf("superseded by revision %d (%s)", rev.Number, rev.Trigger), now))
			}
		}
	}
	for _, p := range s.release.plans {
		setPlanStatus(inst, plan.Start(p, rev.Trigger, rev.Number, now))
	}
	inst.Status.Pending = &rev
	if s.release.request != nil {
		markRequest(inst, s.release.request, nil)
	}
	return r.persist(ctx, s)
}

// advance runs the steps the executor offers for the pending revision's
// plans, in order, until a step has to wait or every plan is finished.
func (r *Reconciler) advance(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	rev := *inst.Status.Pending
	if b := r.ensureNamespace(ctx, s, s.release.namespace); b != nil {
		return r.stopAt(s, b, nil)
	}
	for _, p := range s.release.plans {
		st := planStatus(inst, p.Name)
		if st == nil || st.Revision != rev.Number {
			started := plan.Start(p, rev.Trigger, rev.Number, metav1.NewTime(r.now()))
			st = &started
		}
		next, waiting, err := r.drive(ctx, s, p, *st)
		if err != nil {
			return ctrl.Result{}, err
		}
		if waiting {
			return r.planWaits(s, p, next)
		}
		if next.State != v1alpha1.PlanComplete {
			return r.revisionStopped(ctx, s, rev, next)
		}
	}
	return r.revisionDone(ctx, s, rev)
}

// drive runs p from st with the one executor (plan.Drive): the steps it
// offers run their tasks here, the states of each pass are written to the
// status before the next, so that a manager that stops anywhere resumes at
// the step it was in, and events tell when p starts and finishes.
func (r *Reconciler) drive(ctx context.Context, s *scope, p plan.Plan, st v1alpha1.PlanStatus) (v1alpha1.PlanStatus, bool, error) {
	if st.State == v1alpha1.PlanPending {
		r.event(s, "Normal", "PlanStarted", fmt.Sprintf("plan %s started (revision %d, %s)", p.Name, st.Revision, st.Trigger))
	}
	run := func(_ plan.StepRef, step plan.Step) plan.StepResult { return r.runStep(ctx, s, step) }
	now := func() metav1.Time { return metav1.NewTime(r.now()) }
	saved := func(st v1alpha1.PlanStatus) error {
		setPlanStatus(s.inst, st)
		return r.persist(ctx, s)
	}
	next, waiting, err := plan.Drive(p, st, run, now, saved)
	setPlanStatus(s.inst, next)
	if plan.Finished(next.State) && !plan.Finished(st.State) {
		r.planFinished(s, next)
	}
	return next, waiting, err
}

// planWaits ends a reconcile whose plan waits for a step.
func (r *Reconciler) planWaits(s *scope, p plan.Plan, st v1alpha1.PlanStatus) (ctrl.Result, error) {
	msg := fmt.Sprintf("plan %s: %s", p.Name, st.Message)
	reason := v1alpha1.ReasonPlanRunning
	if st.State == v1alpha1.PlanError {
		msg += "; fix the cause, or abandon the plan with annexctl plan abandon"
	}
	s.block = wait(reason, msg)
	setCondition(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, reason, msg)
	return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
}

func (r *Reconciler) planFinished(s *scope, st v1alpha1.PlanStatus) {
	metrics.ObservePlan(s.choice.Version.Engine, st)
	eventType := "Normal"
	if st.State != v1alpha1.PlanComplete {
		eventType = "Warning"
	}
	msg := fmt.Sprintf("plan %s finished: %s", st.Name, st.State)
	if st.Message != "" {
		msg += ": " + st.Message
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
	applier := s.target.Applier()
	current := applier.Refs(set.Objects, s.targetNamespace())
	if _, err := applier.Prune(ctx, s.owner(), inst.Status.Inventory, current); err != nil {
		s.block = retry(v1alpha1.ReasonApplyFailed, fmt.Sprintf("pruning objects that left %s %s: %v", inst.Spec.Extension, rev.Version, err))
		return ctrl.Result{}, s.block
	}
	if err := r.trimRecords(ctx, s, rev.Number); err != nil {
		return ctrl.Result{}, err
	}
	s.showPermissions(set)
	r.record(s, current, rev, "")
	return ctrl.Result{}, nil
}

// revisionStopped records a revision whose plan stopped (FATAL_ERROR or
// abandoned): Annex does not run its plans again by itself, so the
// revision is recorded as the installed one, with everything its plans
// may have applied still in the inventory, and the Installed condition
// says what stopped and what to do.
func (r *Reconciler) revisionStopped(ctx context.Context, s *scope, rev v1alpha1.Revision, st v1alpha1.PlanStatus) (ctrl.Result, error) {
	inst := s.inst
	if p := findPlan(s.release.plans, st.Name); p != nil {
		st.LeftBehind = leftBehind(*p, st, s.target.Applier(), s.targetNamespace())
		setPlanStatus(inst, st)
	}
	if err := r.trimRecords(ctx, s, rev.Number); err != nil {
		return ctrl.Result{}, err
	}
	inventory := inst.Status.Inventory
	r.record(s, inventory, rev, "PlanStopped")
	reason, msg := v1alpha1.ReasonPlanFailed, fmt.Sprintf("plan %s failed: %s; fix the cause and change spec.values or spec.version, or run it again with annexctl plan run %s", st.Name, st.Message, st.Name)
	if st.State == v1alpha1.PlanAbandoned {
		reason = v1alpha1.ReasonPlanAbandoned
		msg = fmt.Sprintf("plan %s was abandoned (%s); it left behind %d objects (status.plans[%s].leftBehind); run a plan or change the spec to go on", st.Name, st.Message, len(st.LeftBehind), st.Name)
	}
	setCondition(inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, reason, msg)
	s.block = terminal(reason, msg)
	return ctrl.Result{}, nil
}

// abandon carries out an abandon request: the named plan, if it runs,
// stops where it is.
func (r *Reconciler) abandon(ctx context.Context, s *scope, req *v1alpha1.PlanRequest) (ctrl.Result, error) {
	inst := s.inst
	markRequest(inst, nil, req)
	st := planStatus(inst, req.Name)
	if st == nil || !plan.Running(st.State) || inst.Status.Pending == nil {
		r.event(s, "Normal", "PlanAbandoned", fmt.Sprintf("request %s: plan %s is not running; nothing to abandon", req.ID, req.Name))
		return ctrl.Result{}, nil
	}
	abandoned := plan.Abandon(*st, "abandoned by request "+req.ID, metav1.NewTime(r.now()))
	setPlanStatus(inst, abandoned)
	metrics.ObservePlan(s.choice.Version.Engine, abandoned)
	r.event(s, "Warning", "PlanAbandoned", fmt.Sprintf("plan %s abandoned by request %s", req.Name, req.ID))
	return r.revisionStopped(ctx, s, *inst.Status.Pending, abandoned)
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
	s.inventory = inst.Status.Inventory
	for _, name := range last.Plans {
		if st := planStatus(inst, name); st != nil && st.Revision == last.Number && st.State != v1alpha1.PlanComplete {
			c := findCondition(inst, v1alpha1.ConditionInstalled)
			if c != nil {
				s.block = terminal(c.Reason, c.Message)
			}
			return ctrl.Result{}, nil
		}
	}
	prev, err := r.installedState(ctx, s)
	if err != nil || !prev.found {
		return ctrl.Result{}, err
	}
	return r.checkDrift(ctx, s, Set{Objects: driftable(prev.objects)})
}

// driftable leaves out run-to-completion objects (Jobs, Pods): a plan
// runs them once; correcting their drift would run them again.
func driftable(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gk := o.GroupVersionKind().GroupKind()
		if (gk.Group == "batch" && gk.Kind == "Job") || (gk.Group == "" && gk.Kind == "Pod") {
			continue
		}
		out = append(out, o)
	}
	return out
}

// installedState is the set and package record of the installed revision.
type installedState struct {
	revision int64
	found    bool
	crds     []*unstructured.Unstructured // a chart's crds/ folder
	objects  []*unstructured.Unstructured
	pkg      []byte
}

// installedState reads the installed revision's record once per
// reconcile (render, the start of a revision and the drift check all need
// it); empty on install.
func (r *Reconciler) installedState(ctx context.Context, s *scope) (installedState, error) {
	if len(s.inst.Status.History) == 0 {
		return installedState{}, nil
	}
	n := s.inst.Status.History[0].Number
	if s.installed != nil && s.installed.revision == n {
		return *s.installed, nil
	}
	set, found, err := r.recordOf(ctx, s.inst, n)
	if err != nil {
		return installedState{}, err
	}
	s.installed = &installedState{revision: n, found: found, crds: set.CRDs, objects: set.Objects, pkg: set.Package}
	return *s.installed, nil
}

// stateAfter returns the objects a package leaves once plans ran, in
// order, over prev (the installed revision's state, appliedBy saying which
// plan applied each): each plan drops what it applied before, then its
// tasks, in plan order, add what they apply and remove what they delete.
func stateAfter(prev []*unstructured.Unstructured, appliedBy map[string]string, plans []plan.Plan, a Applier, ns string) ([]*unstructured.Unstructured, map[string]string) {
	type entry struct {
		obj  *unstructured.Unstructured
		plan string
	}
	var order []string
	state := map[string]entry{}
	put := func(obj *unstructured.Unstructured, by string) {
		key := refKey(a.Refs([]*unstructured.Unstructured{obj}, ns)[0])
		if _, ok := state[key]; !ok {
			order = append(order, key)
		}
		state[key] = entry{obj: obj, plan: by}
	}
	for _, o := range prev {
		key := refKey(a.Refs([]*unstructured.Unstructured{o}, ns)[0])
		put(o, appliedBy[key])
	}
	for _, p := range plans {
		for key, e := range state {
			if e.plan == p.Name {
				delete(state, key)
			}
		}
		// Tasks in plan order: a step that deletes what an earlier step
		// applied (a Job run once) leaves it out.
		for _, ph := range p.Phases {
			for _, st := range ph.Steps {
				for _, t := range st.Tasks {
					switch t.Kind {
					case plan.TaskApply:
						for _, o := range t.Objects {
							put(o, p.Name)
						}
					case plan.TaskDelete:
						for _, o := range t.Objects {
							delete(state, refKey(a.Refs([]*unstructured.Unstructured{o}, ns)[0]))
						}
					case plan.TaskPipe:
						for _, o := range pipeOutputs(t.Pipe)[1:] { // the pod is gone once the pipe is done
							put(o, p.Name)
						}
					}
				}
			}
		}
	}
	var out []*unstructured.Unstructured
	by := map[string]string{}
	for _, key := range order {
		if e, ok := state[key]; ok {
			out = append(out, e.obj)
			by[key] = e.plan
			delete(state, key) // a key put twice is listed once
		}
	}
	return out, by
}

// allApplied is every object the plans may write: what they apply, and
// the pods and outputs of their pipes.
func allApplied(plans []plan.Plan) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, p := range plans {
		out = append(out, p.Objects(plan.TaskApply)...)
		for _, t := range p.Tasks(plan.TaskPipe) {
			out = append(out, pipeOutputs(t.Pipe)...)
		}
	}
	return out
}

// leftBehind lists what the started steps of a stopped plan apply.
func leftBehind(p plan.Plan, st v1alpha1.PlanStatus, a Applier, ns string) []v1alpha1.ObjectReference {
	var objs []*unstructured.Unstructured
	for _, ref := range plan.Started(p, st) {
		for _, t := range p.Phases[ref.Phase].Steps[ref.Step].Tasks {
			if t.Kind == plan.TaskApply {
				objs = append(objs, t.Objects...)
			}
		}
	}
	refs, _ := unionRefs(nil, a.Refs(objs, ns))
	return refs
}

func findPlan(plans []plan.Plan, name string) *plan.Plan {
	for i := range plans {
		if plans[i].Name == name {
			return &plans[i]
		}
	}
	return nil
}

func planStatus(inst *v1alpha1.ExtensionInstallation, name string) *v1alpha1.PlanStatus {
	for i := range inst.Status.Plans {
		if inst.Status.Plans[i].Name == name {
			return &inst.Status.Plans[i]
		}
	}
	return nil
}

func setPlanStatus(inst *v1alpha1.ExtensionInstallation, st v1alpha1.PlanStatus) {
	if cur := planStatus(inst, st.Name); cur != nil {
		*cur = st
		return
	}
	inst.Status.Plans = append(inst.Status.Plans, st)
}

// listPlans gives every plan of the package a status, NEVER_RUN until it
// runs, so that status shows what can run.
func listPlans(inst *v1alpha1.ExtensionInstallation, p *pkg.Package) {
	names := make([]string, 0, len(p.Operator.Plans))
	for name := range p.Operator.Plans {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if planStatus(inst, name) == nil {
			inst.Status.Plans = append(inst.Status.Plans, plan.NeverRun(name))
		}
	}
}

// cleanupTrigger marks the cleanup plan's run on deletion.
const cleanupTrigger = "deletion"

// runCleanup runs the installed revision's cleanup plan, if its package
// has one, before the inventory is removed (KUDO's order). It is done when
// the plan is COMPLETE or abandoned; a FATAL_ERROR holds the deletion
// until a person fixes the cause or abandons the plan. What the plan
// applies joins the inventory before it is applied, so the uninstall
// removes it too.
func (r *Reconciler) runCleanup(ctx context.Context, s *scope, installed Set) (ctrl.Result, bool, error) {
	inst := s.inst
	cleanup := decodePackageRecord(installed.Package).Cleanup
	if cleanup == nil {
		return ctrl.Result{}, true, nil
	}
	st := planStatus(inst, cleanup.Name)
	if st == nil || st.Trigger != cleanupTrigger {
		var revision int64
		if len(inst.Status.History) > 0 {
			revision = inst.Status.History[0].Number
		}
		inst.Status.Inventory, _ = unionRefs(inst.Status.Inventory, s.target.Applier().Refs(allApplied([]plan.Plan{*cleanup}), s.targetNamespace()))
		inst.Status.InventoryCount = int32(len(inst.Status.Inventory))
		setPlanStatus(inst, plan.Start(*cleanup, cleanupTrigger, revision, metav1.NewTime(r.now())))
		if err := r.persist(ctx, s); err != nil {
			return ctrl.Result{}, false, err
		}
		st = planStatus(inst, cleanup.Name)
	}
	if req := newRunRequest(inst); req != nil && req.Name == cleanup.Name && st.State == v1alpha1.PlanFatalError {
		markRequest(inst, req, nil)
		restarted := plan.Start(*cleanup, cleanupTrigger, st.Revision, metav1.NewTime(r.now()))
		st = &restarted
	}
	if req := newAbandonRequest(inst); req != nil && req.Name == cleanup.Name && plan.Running(st.State) {
		markRequest(inst, nil, req)
		setPlanStatus(inst, plan.Abandon(*st, "abandoned by request "+req.ID, metav1.NewTime(r.now())))
		r.event(s, "Warning", "PlanAbandoned", fmt.Sprintf("plan %s abandoned by request %s; uninstalling goes on", cleanup.Name, req.ID))
		return ctrl.Result{}, true, nil
	}
	if b := r.ensureNamespace(ctx, s, namespaceIn(installed.Objects, s.targetNamespace())); b != nil {
		s.block = b
		if b.kind == blockRetry {
			return ctrl.Result{}, false, b
		}
		return ctrl.Result{RequeueAfter: 30 * r.pollInterval()}, false, nil
	}
	next, waiting, err := r.drive(ctx, s, *cleanup, *st)
	switch {
	case err != nil:
		return ctrl.Result{}, false, err
	case waiting:
		s.block = wait(v1alpha1.ReasonUninstalling, fmt.Sprintf("plan %s: %s", cleanup.Name, next.Message))
		return ctrl.Result{RequeueAfter: r.pollInterval()}, false, nil
	case next.State == v1alpha1.PlanFatalError:
		s.block = wait(v1alpha1.ReasonCleanupFailed, fmt.Sprintf(
			"plan %s failed: %s; the installation is kept until it completes: fix the cause and run annexctl plan run %s, or abandon it with annexctl plan abandon %s to remove the objects anyway",
			cleanup.Name, next.Message, cleanup.Name, cleanup.Name))
		return ctrl.Result{RequeueAfter: 30 * r.pollInterval()}, false, nil
	}
	return ctrl.Result{}, true, nil
}
