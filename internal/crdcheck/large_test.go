package crdcheck

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// largeCRD builds a CRD shaped like a big operator's (prometheus-operator's,
// cert-manager's), about 140 KiB as JSON: two versions, each a schema four
// objects deep with arrays
// of objects, maps, bounded and enumerated scalars, defaults, patterns,
// validation rules and descriptions of real length. seed changes the names,
// so that CRDs differ from each other.
func largeCRD(seed int) *CRD {
	group := fmt.Sprintf("g%d.example.com", seed)
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		root := Props{Type: "object", Properties: map[string]Props{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       objectNode(seed, 3),
			"status":     objectNode(seed+1, 2),
		}}
		return apiextensionsv1.CustomResourceDefinitionVersion{
			Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &root},
		}
	}
	return &CRD{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "things." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    group,
			Scope:    apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing", ListKind: "ThingList", Plural: "things", Singular: "thing"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1beta1", false), version("v1", true)},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1beta1", "v1"}},
	}
}

// objectNode is an object with eight scalar fields of every kind, a map, and
// (above depth 0) an array of objects and a nested object.
func objectNode(seed, depth int) Props {
	describe := func(what string) string {
		return fmt.Sprintf("%s of the thing (seed %d, depth %d). %s", what, seed, depth,
			strings.Repeat("It is read by the operator on every reconcile and checked against the cluster's state before anything changes. ", 2))
	}
	props := map[string]Props{
		"name":     {Type: "string", Description: describe("Name"), MinLength: ptr(int64(1)), MaxLength: ptr(int64(253)), Pattern: `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`},
		"replicas": {Type: "integer", Format: "int32", Description: describe("Replicas"), Minimum: ptr(0.0), Maximum: ptr(100.0), Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
		"ratio":    {Type: "number", Description: describe("Ratio"), Minimum: ptr(0.0), Maximum: ptr(1.0), ExclusiveMaximum: true},
		"paused":   {Type: "boolean", Description: describe("Paused"), Default: &apiextensionsv1.JSON{Raw: []byte("false")}},
		"mode":     {Type: "string", Description: describe("Mode"), Enum: []apiextensionsv1.JSON{{Raw: []byte(`"Fast"`)}, {Raw: []byte(`"Safe"`)}, {Raw: []byte(`"Off"`)}}},
		"note":     {Type: "string", Description: describe("Note"), Nullable: true},
		"port":     {XIntOrString: true, Description: describe("Port"), AnyOf: []Props{{Type: "integer"}, {Type: "string"}}},
		"raw":      {Type: "object", Description: describe("Raw"), XPreserveUnknownFields: ptr(true)},
		"labels": {Type: "object", Description: describe("Labels"), MaxProperties: ptr(int64(64)),
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &Props{Type: "string", MaxLength: ptr(int64(63))}}},
	}
	if depth > 0 {
		item := objectNode(seed, depth-1)
		props["items"] = Props{Type: "array", Description: describe("Items"), MaxItems: ptr(int64(32)), Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}}
		props["nested"] = objectNode(seed, depth-1)
	}
	return Props{
		Type: "object", Description: describe("Object"), Properties: props, Required: []string{"name"},
		XValidations: apiextensionsv1.ValidationRules{{Rule: "self.replicas <= 100", Message: "too many"}},
	}
}

// slightlyChanged is crd with two changes deep in the v1 schema: a maximum
// lowered and a field removed.
func slightlyChanged(crd *CRD) *CRD {
	c := crd.DeepCopy()
	edit(c, func(s *Props) { s.Maximum = ptr(50.0) }, "spec", "nested", "items", "[*]", "replicas")
	edit(c, func(s *Props) { delete(s.Properties, "note") }, "spec", "items", "[*]", "nested", "nested")
	return c
}

// A generated CRD of real size: no findings against itself or a copy that
// went through JSON, the two slight changes found with their paths.
func TestCompareLargeCRD(t *testing.T) {
	installed := largeCRD(0)
	data, err := json.Marshal(installed)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 50<<10 {
		t.Fatalf("the generated CRD is %d bytes, want 50 KiB or more", len(data))
	}
	var copied CRD
	if err := json.Unmarshal(data, &copied); err != nil {
		t.Fatal(err)
	}
	if f := Compare(installed, &copied); f != nil {
		t.Errorf("a JSON copy of the large CRD:\n%s", messages(f))
	}
	var got []want
	for _, f := range Compare(installed, slightlyChanged(installed)) {
		got = append(got, want{f.Class, f.Version, f.Path})
	}
	wantFindings := []want{
		{FieldRemoved, "v1", ".spec.items[*].nested.nested.note"},
		{BoundTightened, "v1", ".spec.nested.items[*].replicas"},
	}
	if fmt.Sprint(got) != fmt.Sprint(wantFindings) {
		t.Errorf("findings %v, want %v", got, wantFindings)
	}
}

// BenchmarkCompare compares 100 generated CRDs of real size (≥ 50 KiB each)
// with a copy of themselves and with a slightly changed copy; ns/CRD is the
// cost of checking one CRD of an upgrade (cpu-ns/CRD the CPU time it took,
// which a busy machine does not inflate), KiB/CRD the CRDs' size as JSON.
func BenchmarkCompare(b *testing.B) {
	const n = 100
	installed, same, changed := make([]*CRD, n), make([]*CRD, n), make([]*CRD, n)
	size := 0
	for i := range n {
		installed[i] = largeCRD(i)
		same[i] = installed[i].DeepCopy()
		changed[i] = slightlyChanged(installed[i])
		data, err := json.Marshal(installed[i])
		if err != nil {
			b.Fatal(err)
		}
		size += len(data)
	}
	for _, bc := range []struct {
		name     string
		proposed []*CRD
	}{{"unchanged", same}, {"changed", changed}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			runtime.GC()
			cpuStart, measured := cpuTime()
			for b.Loop() {
				for i := range n {
					Compare(installed[i], bc.proposed[i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/CRD")
			if cpuEnd, ok := cpuTime(); ok && measured {
				b.ReportMetric(float64(cpuEnd-cpuStart)/float64(b.N*n), "cpu-ns/CRD")
			}
			b.ReportMetric(float64(size)/n/1024, "KiB/CRD")
		})
	}
}
