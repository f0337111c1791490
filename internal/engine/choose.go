package engine

import (
	"fmt"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/plan"
)

// Choose decides which plans of r the inputs of inst run at version
// (artifactDigest, from a version that extends a base when newBase), as
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
// It returns the plans, in order, the trigger they run for, and the
// spec.plans.run request they carry out, if any.
func (rel *Release) Choose(inst *v1alpha1.ExtensionInstallation, version, artifactDigest string, extends bool) ([]string, string, *v1alpha1.PlanRequest) {
	if pending := inst.Status.Pending; pending != nil && pending.Version == version &&
		pending.ArtifactDigest == artifactDigest && pending.ValuesDigest == rel.ValuesDigest {
		return pending.Plans, pending.Trigger, nil // resume
	}
	if len(inst.Status.History) == 0 {
		plans, trigger := rel.Plans.Select(Change{Install: true})
		return plans, trigger, nil
	}
	last := inst.Status.History[0]
	upgrade := last.Version != version || last.ArtifactDigest != artifactDigest
	if !upgrade && len(rel.Changed) == 0 && last.ValuesDigest == rel.ValuesDigest {
		if pending := inst.Status.Pending; pending != nil {
			// Back to the recorded inputs while a revision for others ran:
			// its plans run again with these inputs, putting back what it
			// changed.
			return pending.Plans, fmt.Sprintf("back to the inputs of revision %d", last.Number), nil
		}
		if req := plan.RunRequest(inst); req != nil && rel.RunsOnRequest {
			return []string{req.Name}, "requested (" + req.ID + ")", req
		}
		return nil, "", nil
	}
	plans, trigger := rel.Plans.Select(Change{Upgrade: upgrade, Changed: rel.Changed})
	if upgrade && last.Version != version {
		trigger = fmt.Sprintf("upgrade %s → %s", last.Version, version)
	} else if upgrade && len(rel.Changed) == 0 {
		trigger = "new content of " + version
		if extends {
			trigger = "new content of " + version + " (a new base version)"
		}
	}
	return plans, trigger, nil
}
