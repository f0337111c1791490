package cli

import (
	"fmt"
	"io"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// CRDChangeView is what the installation controller found comparing the
// CRDs of an installation's change with those installed on its cluster
// (spec.upgrade.crdPolicy), as its conditions say it.
type CRDChangeView struct {
	Installation string `json:"installation"`
	// Held: the change was refused (reason UnsafeCRDChange) and nothing of
	// it was applied; otherwise it was applied, kept out (Skip) or forced,
	// and the Warnings condition lists the findings.
	Held bool `json:"held"`
	// Message names each finding: the CRD, the version, the field, and
	// what to do.
	Message string `json:"message"`
}

// crdChangesOf lists, by installation name, the changes whose CRDs the
// controller refused or let through with findings: the Ready condition
// with reason UnsafeCRDChange, or the Warnings condition with reason
// CRDChangeWarnings, for the current generation.
func crdChangesOf(insts []*v1alpha1.ExtensionInstallation) []CRDChangeView {
	var out []CRDChangeView
	for _, inst := range insts {
		ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
		if ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == v1alpha1.ReasonUnsafeCRDChange && ready.ObservedGeneration == inst.Generation {
			out = append(out, CRDChangeView{Installation: nameOfInstallation(inst), Held: true, Message: ready.Message})
			continue
		}
		if w := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings); w != nil && w.Status == metav1.ConditionTrue && w.Reason == v1alpha1.ReasonCRDChangeWarnings {
			out = append(out, CRDChangeView{Installation: nameOfInstallation(inst), Message: w.Message})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Installation < out[j].Installation })
	return out
}

// printCRDChanges prints crdChangesOf's list; nothing when it is empty.
func printCRDChanges(out io.Writer, changes []CRDChangeView) {
	if len(changes) == 0 {
		return
	}
	fmt.Fprintln(out, "\nCRD changes (spec.upgrade.crdPolicy):")
	for _, c := range changes {
		what := "applied with findings"
		if c.Held {
			what = "refused, nothing applied"
		}
		fmt.Fprintf(out, "  %s: %s: %s\n", c.Installation, what, c.Message)
	}
}
