package adopt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// Installation is what an installation that adopts a release is: the
// extension it installs, the version it resolved (the chart version it
// pins), the namespace its chart is rendered into, and its own name and
// namespace.
type Installation struct {
	Extension, Version, TargetNamespace string
	Name, Namespace                     string
}

// Check returns why inst cannot adopt rel as it is, phrased with what to
// change, or nil: Annex renders the installation's extension at its
// version into its target namespace, so these must be the release's
// chart, chart version (as semantic versions) and namespace.
func Check(rel *Release, inst Installation) error {
	where := fmt.Sprintf("Helm release %s/%s revision %d", rel.Namespace, rel.Name, rel.Revision)
	if rel.Chart != inst.Extension {
		return fmt.Errorf("%s is chart %q, not spec.extension %q; set spec.extension to %q (annexctl adopt helm writes it)",
			where, rel.Chart, inst.Extension, rel.Chart)
	}
	if !sameVersion(rel.ChartVersion, inst.Version) {
		return fmt.Errorf("%s is chart %s %s, but spec.version resolved %s; pin spec.version to %q so that nothing changes on adoption (upgrade afterwards)",
			where, rel.Chart, rel.ChartVersion, inst.Version, rel.ChartVersion)
	}
	if rel.Namespace != inst.TargetNamespace {
		return fmt.Errorf("%s runs in namespace %s, but the installation renders into %s; set spec.targetNamespace to %q",
			where, rel.Namespace, inst.TargetNamespace, rel.Namespace)
	}
	return nil
}

func sameVersion(a, b string) bool {
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return va.Equal(vb)
}

// Foreign returns, sorted, the objects of live that carry the labels of
// another installation than inst, each as "Kind namespace/name (installation
// NS/NAME)": adopting them would take them from it.
func Foreign(live []*unstructured.Unstructured, inst Installation) []string {
	var out []string
	self := inst.Namespace + "/" + names.LabelValue(inst.Name)
	for _, o := range live {
		l := o.GetLabels()
		if l[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue || l[v1alpha1.LabelInstallationName] == "" {
			continue
		}
		owner := l[v1alpha1.LabelInstallationNamespace] + "/" + l[v1alpha1.LabelInstallationName]
		if owner != self {
			out = append(out, fmt.Sprintf("%s (installation %s)", RefOf(o), owner))
		}
	}
	slices.Sort(out)
	return out
}

// Summary is the comparison in one line: "3 same, 1 differs (written),
// 0 missing (created), 0 extra (left alone)".
func (c Comparison) Summary() string {
	parts := []string{fmt.Sprintf("%d same", c.Count(Same))}
	if n := c.Count(Differs); n > 0 {
		parts = append(parts, fmt.Sprintf("%d differ (corrected)", n))
	}
	if n := c.Count(Missing); n > 0 {
		parts = append(parts, fmt.Sprintf("%d missing (created)", n))
	}
	if n := c.Count(Extra); n > 0 {
		parts = append(parts, fmt.Sprintf("%d extra (left alone, not adopted)", n))
	}
	return strings.Join(parts, ", ")
}
