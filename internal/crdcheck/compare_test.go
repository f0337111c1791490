package crdcheck

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// widgets is the installed CRD the table cases change: two stored versions,
// a schema with one field of each kind the comparison looks at.
const widgets = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [replicas]
            x-kubernetes-validations:
            - rule: self.replicas >= 0
            properties:
              replicas: {type: integer, minimum: 0, maximum: 10}
              ratio: {type: number, minimum: 0, maximum: 1}
              mode: {type: string, enum: [Fast, Safe], default: Safe}
              name: {type: string, minLength: 1, maxLength: 63, pattern: '^[a-z]+$'}
              note: {type: string, nullable: true}
              selector: {type: object, minProperties: 1, maxProperties: 8, additionalProperties: {type: string}}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
              anything: {type: object, additionalProperties: true}
              size: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              app.kubernetes.io/name: {type: string}
              ports:
                type: array
                minItems: 0
                maxItems: 8
                items:
                  type: object
                  properties:
                    port: {type: integer, minimum: 1, maximum: 65535}
                    protocol: {type: string, enum: [TCP, UDP]}
          status:
            type: object
            properties:
              phase: {type: string}
status:
  storedVersions: [v1alpha1, v1]
`

func loadCRD(t testing.TB, doc string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(doc), &crd); err != nil {
		t.Fatal(err)
	}
	return &crd
}

// edit changes, in crd, the v1 schema node reached through names: property
// names, "[*]" for array items, ".*" for map values.
func edit(crd *apiextensionsv1.CustomResourceDefinition, change func(*apiextensionsv1.JSONSchemaProps), names ...string) {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == "v1" {
			editAt(crd.Spec.Versions[i].Schema.OpenAPIV3Schema, change, names)
			return
		}
	}
	panic("no version v1")
}

func editAt(s *apiextensionsv1.JSONSchemaProps, change func(*apiextensionsv1.JSONSchemaProps), names []string) {
	switch {
	case len(names) == 0:
		change(s)
	case names[0] == "[*]":
		editAt(s.Items.Schema, change, names[1:])
	case names[0] == ".*":
		editAt(s.AdditionalProperties.Schema, change, names[1:])
	default:
		p, ok := s.Properties[names[0]]
		if !ok {
			panic("no property " + names[0])
		}
		editAt(&p, change, names[1:])
		s.Properties[names[0]] = p
	}
}

type CRD = apiextensionsv1.CustomResourceDefinition
type Props = apiextensionsv1.JSONSchemaProps

func ptr[T any](v T) *T { return &v }

func raw(s string) apiextensionsv1.JSON { return apiextensionsv1.JSON{Raw: []byte(s)} }

// want is the part of a finding a case pins; the message is checked for
// every finding by checkMessage.
type want struct {
	class   Class
	version string
	path    string
}

func removeVersion(crd *CRD, name string) {
	crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == name })
}

func TestCompare(t *testing.T) {
	cases := []struct {
		name string
		// before, when set, changes the installed CRD (and so the proposed one).
		before func(*CRD)
		change func(*CRD)
		want   []want
	}{{
		// Nothing changes: nothing to say.
		name:   "no change",
		change: func(*CRD) {},
	}, {
		// v1alpha1 is in status.storedVersions: removing it would leave objects
		// unreadable (and it is served, so clients lose it too).
		name:   "stored version removed",
		change: func(c *CRD) { removeVersion(c, "v1alpha1") },
		want:   []want{{StoredVersionRemoved, "v1alpha1", ""}, {ServedVersionRemoved, "v1alpha1", ""}},
	}, {
		// v1beta1 is served but no object is stored at it.
		name:   "served version removed",
		change: func(c *CRD) { removeVersion(c, "v1beta1") },
		want:   []want{{ServedVersionRemoved, "v1beta1", ""}},
	}, {
		// Still in spec.versions, no longer served.
		name:   "served version unserved",
		change: func(c *CRD) { c.Spec.Versions[1].Served = false },
		want:   []want{{ServedVersionRemoved, "v1beta1", ""}},
	}, {
		// A version that was not served and not stored can go.
		name:   "unserved unstored version removed",
		before: func(c *CRD) { c.Spec.Versions[1].Served = false },
		change: func(c *CRD) { removeVersion(c, "v1beta1") },
	}, {
		name:   "scope changed",
		change: func(c *CRD) { c.Spec.Scope = apiextensionsv1.ClusterScoped },
		want:   []want{{ScopeChanged, "", ""}},
	}, {
		name:   "field removed",
		change: func(c *CRD) { edit(c, func(s *Props) { delete(s.Properties, "note") }, "spec") },
		want:   []want{{FieldRemoved, "v1", ".spec.note"}},
	}, {
		// A field under x-kubernetes-preserve-unknown-fields is kept by the API
		// server even when the schema stops listing it.
		name: "field removed under preserve-unknown-fields",
		before: func(c *CRD) {
			edit(c, func(s *Props) { s.Properties = map[string]Props{"a": {Type: "string"}} }, "spec", "extra")
		},
		change: func(c *CRD) { edit(c, func(s *Props) { delete(s.Properties, "a") }, "spec", "extra") },
	}, {
		// A removed property's name that is not an identifier is quoted.
		name:   "field removed with a dotted name",
		change: func(c *CRD) { edit(c, func(s *Props) { delete(s.Properties, "app.kubernetes.io/name") }, "spec") },
		want:   []want{{FieldRemoved, "v1", `.spec["app.kubernetes.io/name"]`}},
	}, {
		name:   "required field added",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Required = append(s.Required, "mode") }, "spec") },
		want:   []want{{RequiredAdded, "v1", ".spec.mode"}},
	}, {
		// The type check stops at the node: no findings below it repeat it.
		name:   "type changed",
		change: func(c *CRD) { edit(c, func(s *Props) { *s = Props{Type: "string"} }, "spec", "ports") },
		want:   []want{{TypeChanged, "v1", ".spec.ports"}},
	}, {
		name:   "int-or-string narrowed to integer",
		change: func(c *CRD) { edit(c, func(s *Props) { *s = Props{Type: "integer"} }, "spec", "size") },
		want:   []want{{TypeChanged, "v1", ".spec.size"}},
	}, {
		// Every integer is a number: widening.
		name:   "integer widened to number",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Type = "number" }, "spec", "replicas") },
	}, {
		name: "enum narrowed",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.Enum = []apiextensionsv1.JSON{raw(`"TCP"`)} }, "spec", "ports", "[*]", "protocol")
		},
		want: []want{{EnumNarrowed, "v1", ".spec.ports[*].protocol"}},
	}, {
		name: "enum added",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.Enum = []apiextensionsv1.JSON{raw(`"ok"`)} }, "status", "phase")
		},
		want: []want{{EnumNarrowed, "v1", ".status.phase"}},
	}, {
		// A value added and the others reformatted: no value is lost.
		name: "enum widened",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.Enum = []apiextensionsv1.JSON{raw(` "Safe"`), raw(`"Fast" `), raw(`"Slow"`)} }, "spec", "mode")
		},
	}, {
		name:   "minimum raised",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Minimum = ptr(1.0) }, "spec", "replicas") },
		want:   []want{{BoundTightened, "v1", ".spec.replicas"}},
	}, {
		name:   "maximum lowered",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Maximum = ptr(1024.0) }, "spec", "ports", "[*]", "port") },
		want:   []want{{BoundTightened, "v1", ".spec.ports[*].port"}},
	}, {
		name:   "maximum added",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Maximum = ptr(5.0) }, "spec", "ports", "[*]", "port") },
		want:   []want{{BoundTightened, "v1", ".spec.ports[*].port"}},
	}, {
		name:   "exclusiveMinimum set",
		change: func(c *CRD) { edit(c, func(s *Props) { s.ExclusiveMinimum = true }, "spec", "ratio") },
		want:   []want{{BoundTightened, "v1", ".spec.ratio"}},
	}, {
		name:   "exclusiveMaximum set",
		change: func(c *CRD) { edit(c, func(s *Props) { s.ExclusiveMaximum = true }, "spec", "ratio") },
		want:   []want{{BoundTightened, "v1", ".spec.ratio"}},
	}, {
		name:   "multipleOf added",
		change: func(c *CRD) { edit(c, func(s *Props) { s.MultipleOf = ptr(0.25) }, "spec", "ratio") },
		want:   []want{{BoundTightened, "v1", ".spec.ratio"}},
	}, {
		name: "lengths tightened",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.MinLength, s.MaxLength = ptr(int64(2)), ptr(int64(32)) }, "spec", "name")
		},
		want: []want{{BoundTightened, "v1", ".spec.name"}, {BoundTightened, "v1", ".spec.name"}},
	}, {
		name: "items tightened",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.MinItems, s.MaxItems = ptr(int64(1)), ptr(int64(4)) }, "spec", "ports")
		},
		want: []want{{BoundTightened, "v1", ".spec.ports"}, {BoundTightened, "v1", ".spec.ports"}},
	}, {
		name: "properties tightened",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.MinProperties, s.MaxProperties = ptr(int64(2)), ptr(int64(4)) }, "spec", "selector")
		},
		want: []want{{BoundTightened, "v1", ".spec.selector"}, {BoundTightened, "v1", ".spec.selector"}},
	}, {
		// Lower minimums, higher maximums, a bound dropped: all accept more.
		name: "bounds widened",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.Minimum, s.Maximum = ptr(-1.0), nil }, "spec", "replicas")
			edit(c, func(s *Props) { s.MinLength, s.MaxLength, s.Pattern = nil, ptr(int64(253)), "" }, "spec", "name")
			edit(c, func(s *Props) { s.MaxItems = nil }, "spec", "ports")
		},
	}, {
		name:   "pattern changed",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Pattern = "^[a-z0-9]+$" }, "spec", "name") },
		want:   []want{{PatternChanged, "v1", ".spec.name"}},
	}, {
		name:   "pattern added",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Pattern = "^[a-z]+$" }, "status", "phase") },
		want:   []want{{PatternChanged, "v1", ".status.phase"}},
	}, {
		name: "default changed",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.Default = &apiextensionsv1.JSON{Raw: []byte(`"Fast"`)} }, "spec", "mode")
		},
		want: []want{{DefaultChanged, "v1", ".spec.mode"}},
	}, {
		name:   "default removed",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Default = nil }, "spec", "mode") },
		want:   []want{{DefaultChanged, "v1", ".spec.mode"}},
	}, {
		name:   "made non-nullable",
		change: func(c *CRD) { edit(c, func(s *Props) { s.Nullable = false }, "spec", "note") },
		want:   []want{{NullableRemoved, "v1", ".spec.note"}},
	}, {
		name:   "preserve-unknown-fields removed",
		change: func(c *CRD) { edit(c, func(s *Props) { s.XPreserveUnknownFields = nil }, "spec", "extra") },
		want:   []want{{PreserveUnknownFieldsRemoved, "v1", ".spec.extra"}},
	}, {
		name:   "additionalProperties removed",
		change: func(c *CRD) { edit(c, func(s *Props) { s.AdditionalProperties = nil }, "spec", "selector") },
		want:   []want{{AdditionalPropertiesNarrowed, "v1", ".spec.selector"}},
	}, {
		name: "additionalProperties any narrowed to a schema",
		change: func(c *CRD) {
			edit(c, func(s *Props) {
				s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &Props{Type: "string"}}
			}, "spec", "anything")
		},
		want: []want{{AdditionalPropertiesNarrowed, "v1", ".spec.anything"}},
	}, {
		// The map's value schema is walked like any other.
		name:   "map values tightened",
		change: func(c *CRD) { edit(c, func(s *Props) { s.MaxLength = ptr(int64(63)) }, "spec", "selector", ".*") },
		want:   []want{{BoundTightened, "v1", ".spec.selector.*"}},
	}, {
		name: "validation rule added",
		change: func(c *CRD) {
			edit(c, func(s *Props) {
				s.XValidations = append(s.XValidations, apiextensionsv1.ValidationRule{Rule: "self.replicas <= 5"})
			}, "spec")
		},
		want: []want{{ValidationRuleAdded, "v1", ".spec"}},
	}, {
		// Same number of anyOf branches: compared pairwise at the same path.
		name:   "anyOf branch tightened",
		change: func(c *CRD) { edit(c, func(s *Props) { s.AnyOf[1].MaxLength = ptr(int64(8)) }, "spec", "size") },
		want:   []want{{BoundTightened, "v1", ".spec.size"}},
	}, {
		name:   "anyOf branch removed",
		change: func(c *CRD) { edit(c, func(s *Props) { s.AnyOf = s.AnyOf[:1] }, "spec", "size") },
		want:   []want{{CombinatorChanged, "v1", ".spec.size"}},
	}, {
		name: "allOf branch added",
		change: func(c *CRD) {
			edit(c, func(s *Props) { s.AllOf = []Props{{Required: []string{"port"}}} }, "spec", "ports", "[*]")
		},
		want: []want{{CombinatorChanged, "v1", ".spec.ports[*]"}},
	}, {
		// Added versions, optional fields and descriptions break nothing.
		name: "additions only",
		change: func(c *CRD) {
			v2 := *c.Spec.Versions[2].DeepCopy()
			v2.Name, v2.Storage = "v2", false
			c.Spec.Versions = append(c.Spec.Versions, v2)
			edit(c, func(s *Props) {
				s.Description = "the spec"
				s.Properties["paused"] = Props{Type: "boolean"}
			}, "spec")
		},
	}, {
		// Several changes at once come out in path order, names sorted.
		name: "several changes in order",
		change: func(c *CRD) {
			edit(c, func(s *Props) { delete(s.Properties, "phase") }, "status")
			edit(c, func(s *Props) { s.Maximum = ptr(3.0) }, "spec", "replicas")
			edit(c, func(s *Props) { s.Nullable = false }, "spec", "note")
			edit(c, func(s *Props) { s.Enum = []apiextensionsv1.JSON{raw(`"Safe"`)} }, "spec", "mode")
		},
		want: []want{
			{EnumNarrowed, "v1", ".spec.mode"},
			{NullableRemoved, "v1", ".spec.note"},
			{BoundTightened, "v1", ".spec.replicas"},
			{FieldRemoved, "v1", ".status.phase"},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			installed := loadCRD(t, widgets)
			if tc.before != nil {
				tc.before(installed)
			}
			proposed := installed.DeepCopy()
			tc.change(proposed)
			before := installed.DeepCopy()
			findings := Compare(installed, proposed)
			var got []want
			for _, f := range findings {
				got = append(got, want{f.Class, f.Version, f.Path})
				checkFinding(t, f)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings:\n got  %v\n want %v\n%s", got, tc.want, messages(findings))
			}
			if !reflect.DeepEqual(installed, before) {
				t.Error("Compare changed the installed CRD")
			}
			if again := Compare(installed, proposed); !reflect.DeepEqual(again, findings) {
				t.Errorf("a second Compare differs:\n%s\n%s", messages(findings), messages(again))
			}
		})
	}
}

// checkFinding holds every finding to the message contract: it names the CRD,
// the version and the field, and says what to do; and only a default change
// is a mere warning.
func checkFinding(t *testing.T, f Finding) {
	t.Helper()
	if f.CRD != "widgets.example.com" || !strings.Contains(f.Message, "CRD widgets.example.com") {
		t.Errorf("finding does not name the CRD: %+v", f)
	}
	if f.Version != "" && !strings.Contains(f.Message, "version "+f.Version) {
		t.Errorf("message does not name version %s: %s", f.Version, f.Message)
	}
	if f.Path != "" && !strings.Contains(f.Message, "field "+f.Path+":") {
		t.Errorf("message does not name field %s: %s", f.Path, f.Message)
	}
	if !strings.Contains(f.Message, "; ") || !containsAny(f.Message, "keep", "check", "give", "make sure", "set ", "ship") {
		t.Errorf("message does not say what to do: %s", f.Message)
	}
	if wantWarning := f.Class == DefaultChanged; wantWarning != (f.Severity == Warning) {
		t.Errorf("%s has severity %s", f.Class, f.Severity)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func messages(findings []Finding) string {
	var b strings.Builder
	for _, f := range findings {
		b.WriteString("  " + f.Message + "\n")
	}
	return b.String()
}

// Either side nil is a first install or a CRD no longer shipped: no findings.
func TestCompareNil(t *testing.T) {
	crd := loadCRD(t, widgets)
	if f := Compare(nil, crd); f != nil {
		t.Errorf("Compare(nil, crd) = %v", f)
	}
	if f := Compare(crd, nil); f != nil {
		t.Errorf("Compare(crd, nil) = %v", f)
	}
}

// Annex's own CRDs (one over 50 KiB) compared with themselves and with a deep
// copy read again from YAML: no findings.
func TestCompareRealCRDsUnchanged(t *testing.T) {
	files, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	large := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) >= 50<<10 {
			large++
		}
		installed, proposed := loadCRD(t, string(data)), loadCRD(t, string(data))
		installed.Status.StoredVersions = []string{installed.Spec.Versions[0].Name}
		if f := Compare(installed, installed); f != nil {
			t.Errorf("%s compared with itself:\n%s", file, messages(f))
		}
		if f := Compare(installed, proposed); f != nil {
			t.Errorf("%s compared with a copy:\n%s", file, messages(f))
		}
	}
	if large == 0 {
		t.Error("no CRD of config/crd/bases is 50 KiB or more; the real large case is gone")
	}
}
