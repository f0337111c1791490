package installation

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/plan"
)

// planRun is what this reconcile's change runs of a release with plans:
// the plans, rendered, and why they run.
type planRun struct {
	params map[string]any
	// plans run in this order; empty when nothing changed.
	plans   []plan.Plan
	trigger string
	// request is the spec.plans.run request these plans carry out, if any.
	request *v1alpha1.PlanRequest
	// cleanup is the rendered cleanup plan, kept in the record for the
	// uninstall; nil when the release has none.
	cleanup *plan.Plan
	// namespace holds the target namespace when Annex creates it (it does
	// not exist on the target cluster, or an earlier revision created it):
	// applied before the plans' first step on every pass, recorded, removed
	// on uninstall.
	namespace []*unstructured.Unstructured
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

// renderPlans chooses the plans this change runs (choosePlans) and
// renders them, with the cleanup plan the revision keeps for the
// uninstall. A plan that does not render stops here, before anything is
// applied.
func (r *Reconciler) renderPlans(ctx context.Context, s *scope) (ctrl.Result, error) {
	rel := s.artifact.release
	names, trigger, request := r.choosePlans(s, rel)
	plans, warnings, err := rel.Plans.Render(names)
	if err != nil {
		var refused *engine.Error
		if errors.As(err, &refused) {
			return r.stop(s, terminal(refused.Reason, refused.Message), ctrl.Result{})
		}
		return ctrl.Result{}, err
	}
	cleanup, cleanupWarnings := rel.Plans.Cleanup()
	rel.Warnings = slices.Concat(rel.Warnings, warnings, cleanupWarnings)
	s.artifact.run = &planRun{params: rel.Params, plans: plans, trigger: trigger, request: request, cleanup: cleanup}
	// A plan that resumes creates only the namespace its revision
	// recorded: what Annex applies is recorded first.
	s.artifact.run.namespace = r.createdNamespace(ctx, s, len(names) > 0 && !resuming(s))
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

// choosePlans decides which plans of rel this reconcile's inputs run, as
// KUDO users expect: install → the engine's choice for an install (a
// package's deploy, a bundle's install); upgrade (a new version, or new
// content of the same version, such as a new base within the extends
// range) or changed parameters → the engine's choice for the change
// (a package's upgrade or the parameters' triggers, else update, else
// deploy). Unchanged inputs run nothing, unless spec.plans.run asks for a
// plan of a release that runs plans on request. A change while a plan
// runs is compared with the last recorded revision, so the running plan's
// unfinished work is part of it; the running plan is superseded. The same
// inputs as the pending revision's resume it.
func (r *Reconciler) choosePlans(s *scope, rel *engine.Release) ([]string, string, *v1alpha1.PlanRequest) {
	inst := s.inst
	version := s.choice.Version.Version
	if pending := inst.Status.Pending; pending != nil && pending.Version == version &&
		pending.ArtifactDigest == s.artifact.digest && pending.ValuesDigest == rel.ValuesDigest {
		return pending.Plans, pending.Trigger, nil // resume
	}
	if len(inst.Status.History) == 0 {
		plans, trigger := rel.Plans.Select(engine.Change{Install: true})
		return plans, trigger, nil
	}
	last := inst.Status.History[0]
	upgrade := last.Version != version || last.ArtifactDigest != s.artifact.digest
	if !upgrade && len(rel.Changed) == 0 && last.ValuesDigest == rel.ValuesDigest {
		if pending := inst.Status.Pending; pending != nil {
			// Back to the recorded inputs while a revision for others ran:
			// its plans run again with these inputs, putting back what it
			// changed.
			return pending.Plans, fmt.Sprintf("back to the inputs of revision %d", last.Number), nil
		}
		if req := newRunRequest(inst); req != nil && rel.RunsOnRequest {
			return []string{req.Name}, "requested (" + req.ID + ")", req
		}
		return nil, "", nil
	}
	plans, trigger := rel.Plans.Select(engine.Change{Upgrade: upgrade, Changed: rel.Changed})
	if upgrade && last.Version != version {
		trigger = fmt.Sprintf("upgrade %s → %s", last.Version, version)
	} else if upgrade && len(rel.Changed) == 0 {
		trigger = "new content of " + version
		if s.choice.Version.Extends != nil {
			trigger = "new content of " + version + " (a new base version)"
		}
	}
	return plans, trigger, nil
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

// listPlans gives every plan of names a status, NEVER_RUN until it runs,
// so that status shows what can run.
func listPlans(inst *v1alpha1.ExtensionInstallation, names []string) {
	for _, name := range names {
		if plan.StatusOf(inst.Status.Plans, name) == nil {
			inst.Status.Plans = append(inst.Status.Plans, plan.NeverRun(name))
		}
	}
}
