package crdcheck

// Policy is what an upgrade does with a CRD change: the value of an
// installation's `spec.upgrade.crdPolicy` (v1alpha1.CRDPolicy, the same
// words).
type Policy string

const (
	// Strict refuses an upgrade with a Breaking finding; the default.
	Strict Policy = "Strict"
	// Warn applies the proposed CRD and reports every finding.
	Warn Policy = "Warn"
	// Skip keeps the installed CRD whatever changed, as Helm does with crds/,
	// and applies the rest of the upgrade.
	Skip Policy = "Skip"
	// Force applies the proposed CRD and reports the findings as what the user
	// forced past. Decide treats Warn and Force alike; how the caller reports
	// them (a standing warning, or a record of the override) is the apply
	// step's choice.
	Force Policy = "Force"
)

// Action is what to do with the proposed CRD.
type Action string

const (
	// Apply the proposed CRD.
	Apply Action = "Apply"
	// Refuse the upgrade: apply nothing of it and say why.
	Refuse Action = "Refuse"
	// KeepInstalled leaves the installed CRD as it is and goes on with the
	// rest of the upgrade.
	KeepInstalled Action = "KeepInstalled"
)

// Decision is the verdict of Decide.
type Decision struct {
	Action Action
	// Report holds the findings to show: under Refuse the Breaking ones that
	// refused the upgrade, otherwise every finding (warnings, what Force
	// forced past, what Skip leaves out).
	Report []Finding
}

// Decide turns the findings of one CRD (or of every CRD of an upgrade) into
// what to do under policy:
//   - Skip keeps the installed CRD, whatever the findings.
//   - A StoredVersionRemoved or ScopeChanged finding refuses under every other
//     policy: the API server refuses such an update itself, so Force could
//     only trade Annex's message for its error.
//   - Strict refuses on any Breaking finding and applies otherwise.
//   - Warn and Force apply.
//
// The empty policy is Strict; so is any unknown one, the safe reading of a
// value the API's enum validation keeps out. Decide never changes findings.
func Decide(policy Policy, findings []Finding) Decision {
	if policy == Skip {
		return Decision{Action: KeepInstalled, Report: findings}
	}
	lenient := policy == Warn || policy == Force
	var refusing []Finding
	for _, f := range findings {
		if refusedByAPIServer(f.Class) || (!lenient && f.Severity == Breaking) {
			refusing = append(refusing, f)
		}
	}
	if len(refusing) > 0 {
		return Decision{Action: Refuse, Report: refusing}
	}
	return Decision{Action: Apply, Report: findings}
}

// refusedByAPIServer says whether the API server refuses a CRD update with a
// change of this class (spec.scope is immutable; status.storedVersions must
// stay in spec.versions), whatever Annex decides.
func refusedByAPIServer(c Class) bool {
	return c == StoredVersionRemoved || c == ScopeChanged
}
