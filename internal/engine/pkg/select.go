package pkg

import (
	"slices"
	"strings"
)

// Change is what happened to an installation, as the controller observed
// it. At most one of Install, Upgrade and Delete is meaningful; Delete
// wins, then Install, then Upgrade.
type Change struct {
	Install, Upgrade, Delete bool
	// Changed lists the parameters whose effective value changed (see
	// Changed); on Install it is ignored.
	Changed []string
	// From and To are the operator versions of an upgrade, for the
	// trigger text only.
	From, To string
}

// SelectPlans says which plans a change runs, in the order they are to
// run (each after the previous one completes), and a short human text for
// status naming what triggered them. No plan and "" mean nothing to do.
//
//   - Delete: cleanup if the package has it, else none.
//   - Install: deploy.
//   - Upgrade: upgrade, else update, else deploy; when parameters changed
//     too, then the plans their `trigger`s name that are not listed yet
//     (a changed parameter without a trigger is covered by the upgrade's
//     plan).
//   - Parameters changed: each changed parameter runs its trigger, or
//     update (else deploy) when it has none. Where that makes several
//     distinct plans, they run in the order in which the first parameter
//     triggering each appears in params.yaml; parameters p does not
//     declare (removed ones) count last. KUDO refused such a change
//     (kudo#354) and made users sequence their updates.
//
// A trigger naming a plan the package lacks is returned as is: Lint
// reports it and RenderPlan fails naming the plans there are.
func SelectPlans(p *Package, c Change) (plans []string, trigger string) {
	switch {
	case c.Delete:
		if _, ok := p.Operator.Plans[PlanCleanup]; ok {
			return []string{PlanCleanup}, "delete"
		}
		return nil, ""
	case c.Install:
		return []string{PlanDeploy}, "install"
	case c.Upgrade:
		plans = []string{p.firstPlan(PlanUpgrade, PlanUpdate, PlanDeploy)}
		for _, name := range p.inParamsOrder(c.Changed) {
			if prm := p.param(name); prm != nil && prm.Trigger != "" && !slices.Contains(plans, prm.Trigger) {
				plans = append(plans, prm.Trigger)
			}
		}
		trigger = "upgrade"
		if c.From != "" || c.To != "" {
			trigger += " " + c.From + " → " + c.To
		}
		if len(c.Changed) > 0 {
			trigger += ", parameters " + strings.Join(p.inParamsOrder(c.Changed), ", ")
		}
		return plans, trigger
	case len(c.Changed) > 0:
		changed := p.inParamsOrder(c.Changed)
		fallback := p.firstPlan(PlanUpdate, PlanDeploy)
		for _, name := range changed {
			plan := fallback
			if prm := p.param(name); prm != nil && prm.Trigger != "" {
				plan = prm.Trigger
			}
			if !slices.Contains(plans, plan) {
				plans = append(plans, plan)
			}
		}
		word := "parameter "
		if len(changed) > 1 {
			word = "parameters "
		}
		return plans, word + strings.Join(changed, ", ")
	}
	return nil, ""
}

// firstPlan returns the first of names the package has, else the last
// name (deploy, which every package must have).
func (p *Package) firstPlan(names ...string) string {
	for _, name := range names {
		if _, ok := p.Operator.Plans[name]; ok {
			return name
		}
	}
	return names[len(names)-1]
}

// inParamsOrder sorts names by their position in params.yaml; names p
// does not declare come last, sorted.
func (p *Package) inParamsOrder(names []string) []string {
	index := make(map[string]int, len(p.Params.Parameters))
	for i, prm := range p.Params.Parameters {
		index[prm.Name] = i
	}
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int {
		ia, okA := index[a]
		ib, okB := index[b]
		switch {
		case okA && okB:
			return ia - ib
		case okA:
			return -1
		case okB:
			return 1
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}
