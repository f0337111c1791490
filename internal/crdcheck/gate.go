package crdcheck

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/readiness"
)

// The gate of spec.upgrade.crdPolicy, as the installation controller runs
// it on a change: it reads the installed CRDs, and Gate says what the
// change may do with its own.

// Verdict is what the gate makes of a change's CRDs.
type Verdict struct {
	// Report is status.crdChanges (nil: nothing to report).
	Report *v1alpha1.CRDChangeReport
	// Refusal, when not "", stops the change before anything is applied
	// (terminal, reason UnsafeCRDChange): why, and what to do.
	Refusal string
	// Resumed: an earlier pass of this same change judged it and applied
	// its CRDs; judged again against them it finds nothing, and what it
	// let through stays shown (Report is that pass's, the Warnings
	// condition stays too).
	Resumed bool
	// Keep are the installed CRDs the change applies in place of its own
	// (Skip), by name.
	Keep map[string]*unstructured.Unstructured
	// Warning tells what a lenient policy let through, for the Warnings
	// condition and a Warning Event of reason EventReason; "" when
	// nothing.
	Warning, EventReason string
}

// Gate judges the CRDs proposed by a change of inst to version against
// those installed (by name) under inst's policy (Judge). prev is the
// status.crdChanges inst had when this pass began.
func Gate(inst *v1alpha1.ExtensionInstallation, version string, prev *v1alpha1.CRDChangeReport, proposed []*unstructured.Unstructured, installed map[string]*unstructured.Unstructured) Verdict {
	ref := inst.Spec.Extension + " " + version
	j, err := Judge(Policy(PolicyOf(inst)), proposed, installed)
	if err != nil {
		return Verdict{Refusal: fmt.Sprintf("%s: %v; nothing of it was applied; choose another version with spec.version", ref, err)}
	}
	if len(j.Refused) == 0 && len(j.Report) == 0 && JudgedBefore(inst, prev, version) {
		return Verdict{Report: prev, Resumed: true}
	}
	v := Verdict{Report: Status(version, j)}
	if len(j.Refused) > 0 {
		v.Refusal = RefusalMessage(ref, j)
		return v
	}
	v.Keep, v.Warning, v.EventReason = j.Keep, ReportMessage(ref, j), "CRDChangesApplied"
	if j.Policy == Skip {
		v.EventReason = "CRDChangesSkipped"
	}
	return v
}

// JudgedBefore reports whether prev, the status.crdChanges inst had when
// this pass began, is the report of the change to version at inst's
// generation, which let CRD changes through (Warnings set at this
// generation): a change that takes more than one pass resumes after its
// CRDs were applied.
func JudgedBefore(inst *v1alpha1.ExtensionInstallation, prev *v1alpha1.CRDChangeReport, version string) bool {
	warnings := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings)
	return prev != nil && prev.Version == version && prev.Outcome == v1alpha1.CRDChangeApplied &&
		warnings != nil && warnings.Reason == v1alpha1.ReasonCRDChangeWarnings && warnings.ObservedGeneration == inst.Generation
}

// ShowWarnings shows msg, what the last change did with CRD changes a
// lenient policy let through, in inst's Warnings condition, beside the
// engine's warnings (render sets those first); "" clears it unless the
// engine warns. It stays until the next change is judged.
func ShowWarnings(inst *v1alpha1.ExtensionInstallation, msg string, engine []string) {
	switch {
	case msg != "":
		readiness.Set(inst, v1alpha1.ConditionWarnings, metav1.ConditionTrue, v1alpha1.ReasonCRDChangeWarnings,
			strings.Join(append([]string{msg}, engine...), "; "))
	case len(engine) == 0:
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionWarnings)
	}
}

// ShowReleaseWarnings shows the engine's warnings about the release just
// rendered in inst's Warnings condition (reason PackageWarnings). Without
// any, the condition goes, unless it tells what the last change did with
// its CRDs (ShowWarnings): that stays until the next change is judged.
func ShowReleaseWarnings(inst *v1alpha1.ExtensionInstallation, warnings []string) {
	if len(warnings) > 0 {
		readiness.Set(inst, v1alpha1.ConditionWarnings, metav1.ConditionTrue, "PackageWarnings", strings.Join(warnings, "; "))
	} else if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings); c == nil || c.Reason != v1alpha1.ReasonCRDChangeWarnings {
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionWarnings)
	}
}
