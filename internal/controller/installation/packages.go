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
