package crdcheck

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzCompare reads two CRDs from fuzzed YAML: Compare must never panic, must
// find nothing between a CRD and itself, and every finding must name its CRD
// and class; Decide must never panic on what it found.
func FuzzCompare(f *testing.F) {
	f.Add([]byte(widgets), []byte(widgets))
	f.Add([]byte(widgets), []byte(strings.ReplaceAll(widgets, "maximum: 10", "maximum: 5")))
	f.Add([]byte(widgets), []byte(strings.ReplaceAll(widgets, "scope: Namespaced", "scope: Cluster")))
	f.Add([]byte(widgets), []byte(strings.ReplaceAll(widgets, "enum: [TCP, UDP]", "enum: [TCP]")))
	f.Add([]byte(widgets), []byte(strings.ReplaceAll(widgets, "type: integer, minimum: 1", "type: string, minimum: 1")))
	f.Add([]byte(`{"spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"multipleOf":0,"items":{},"additionalProperties":false}}}]}}`),
		[]byte(`{"spec":{"versions":[{"name":"v1","schema":{"openAPIV3Schema":{"allOf":[{"type":"x"}],"anyOf":[{}]}}}]}}`))
	f.Fuzz(func(t *testing.T, installedYAML, proposedYAML []byte) {
		var installed, proposed CRD
		if yaml.Unmarshal(installedYAML, &installed) != nil || yaml.Unmarshal(proposedYAML, &proposed) != nil {
			return
		}
		if same := Compare(&installed, installed.DeepCopy()); same != nil {
			t.Errorf("a CRD compared with itself:\n%s", messages(same))
		}
		findings := Compare(&installed, &proposed)
		for _, f := range findings {
			if f.Class == "" || f.CRD != proposed.Name || !strings.HasPrefix(f.Message, "CRD "+proposed.Name) {
				t.Errorf("finding without its class or CRD: %+v", f)
			}
		}
		for _, p := range []Policy{"", Strict, Warn, Skip, Force} {
			d := Decide(p, findings)
			if d.Action == Refuse && len(d.Report) == 0 {
				t.Errorf("Decide(%q) refuses without a reason", p)
			}
		}
		if again := Compare(&installed, &proposed); !reflect.DeepEqual(again, findings) {
			t.Error("Compare is not deterministic")
		}
	})
}
