package crdcheck

import "github.com/annex-platform/annex/api/v1alpha1"

// What an installation's status says of a judgement: the policy it was
// judged under, and status.crdChanges.

// PolicyOf is inst's spec.upgrade.crdPolicy; unset is Strict.
func PolicyOf(inst *v1alpha1.ExtensionInstallation) v1alpha1.CRDPolicy {
	if p := inst.Spec.Upgrade.CRDPolicy; p != "" {
		return p
	}
	return v1alpha1.CRDPolicyStrict
}

// MaxStatusFindings bounds status.crdChanges.findings.
const MaxStatusFindings = 20

// Status is status.crdChanges for j, the judgement of a change to
// version: what people see of it before it touches the cluster (Refused)
// or after (Applied, or Skipped under Skip); nil when j has nothing to
// report.
func Status(version string, j Judgement) *v1alpha1.CRDChangeReport {
	outcome, findings := v1alpha1.CRDChangeApplied, j.Report
	switch {
	case len(j.Refused) > 0:
		outcome, findings = v1alpha1.CRDChangeRefused, j.Refused
	case len(j.Report) == 0:
		return nil
	case j.Policy == Skip:
		outcome = v1alpha1.CRDChangeSkipped
	}
	r := &v1alpha1.CRDChangeReport{Version: version, Policy: v1alpha1.CRDPolicy(j.Policy), Outcome: outcome, Findings: []v1alpha1.CRDFinding{}}
	for i, f := range findings {
		if i == MaxStatusFindings {
			r.Truncated = int32(len(findings) - MaxStatusFindings)
			break
		}
		r.Findings = append(r.Findings, v1alpha1.CRDFinding{CRD: f.CRD, Version: f.Version, Path: f.Path, Class: string(f.Class), Message: f.Message})
	}
	return r
}
