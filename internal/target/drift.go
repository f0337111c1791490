package target

import (
	"fmt"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
)

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
