package target

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

// DriftPort is what a drift check asks of the installation and its
// target cluster.
type DriftPort interface {
	// Diff compares the cluster with set; Correct applies set again,
	// taking back the fields another manager took over.
	Diff(set Set) ([]Drift, Health, error)
	Correct(set Set) (Applied, error)
	// Seen notes the inventory's health as the check saw it; nil: what
	// was seen before is no longer current.
	Seen(h *Health)
	// Refused is how an error of Correct stops the installation.
	Refused(err error) *news.Stop
	// Event tells a person, as an Event of the installation.
	Event(eventType, reason, message string)
}

// DriftOutcome is what a drift check did: Stop when the cluster could
// not be compared or corrected, Corrected when it restored drifted
// objects.
type DriftOutcome struct {
	Stop      *news.Stop
	Corrected bool
}

// CheckDrift compares the cluster with set, the installed revision of
// inst, once the installation is Ready (wasReady). Nothing drifted costs
// reads only. Enabled corrects drift (and recreates deleted objects); Warn
// lists it in status.drifted and tells it when it changed; Disabled
// clears status.drifted.
func CheckDrift(inst *v1alpha1.ExtensionInstallation, wasReady bool, set Set, port DriftPort) DriftOutcome {
	mode := inst.Spec.DriftDetection
	if mode == v1alpha1.DriftDetectionDisabled || !wasReady {
		if mode == v1alpha1.DriftDetectionDisabled {
			inst.Status.Drifted = nil
		}
		return DriftOutcome{}
	}
	drifts, health, err := port.Diff(set)
	if err != nil {
		return DriftOutcome{Stop: &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonApplyFailed,
			Message: fmt.Sprintf("comparing the cluster with revision %d: %v", inst.Status.History[0].Number, err)}}
	}
	port.Seen(&health)
	found := Drifted(drifts)
	if len(found) == 0 {
		inst.Status.Drifted = nil
		return DriftOutcome{}
	}
	if mode == v1alpha1.DriftDetectionWarn {
		if !equality.Semantic.DeepEqual(found, inst.Status.Drifted) {
			port.Event(corev1.EventTypeWarning, "Drifted", "objects differ from the installed revision (driftDetection: Warn): "+DescribeDrift(found))
		}
		inst.Status.Drifted = found
		return DriftOutcome{}
	}
	// The drifted objects are in the inventory, so Annex owns them: fields
	// another manager took over since are taken back (objects of another
	// installation are still refused).
	corrected, err := port.Correct(set)
	if err != nil {
		port.Seen(nil)
		b := port.Refused(err)
		b.Message = "correcting drift: " + b.Message
		inst.Status.Drifted = found
		return DriftOutcome{Stop: b}
	}
	inst.Status.Drifted = nil
	inst.Status.AdoptedObjects = corrected.Adopted // those corrected are claimed now
	port.Seen(&corrected.Health)
	port.Event(corev1.EventTypeNormal, "DriftCorrected", "restored objects that differed from the installed revision: "+DescribeDrift(found))
	return DriftOutcome{Corrected: true}
}

// Drifted is status.drifted of drifts: each object with the fields that
// differ from the installed revision, "deleted" for one that is gone.
func Drifted(drifts []Drift) []v1alpha1.DriftedObject {
	out := make([]v1alpha1.DriftedObject, 0, len(drifts))
	for _, d := range drifts {
		fields := d.Fields
		if d.Missing {
			fields = []string{"deleted"}
		}
		out = append(out, v1alpha1.DriftedObject{ObjectReference: d.Object, Fields: fields})
	}
	return out
}

// DescribeDrift names drifted objects and their fields for an Event: the
// first five, then how many more.
func DescribeDrift(objs []v1alpha1.DriftedObject) string {
	parts := make([]string, 0, len(objs))
	for i, o := range objs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(objs)-5))
			break
		}
		name := o.Name
		if o.Namespace != "" {
			name = o.Namespace + "/" + o.Name
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", o.Kind, name, strings.Join(o.Fields, ", ")))
	}
	return strings.Join(parts, "; ")
}
