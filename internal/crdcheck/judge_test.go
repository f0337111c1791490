package crdcheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/plan"
)

// gizmoCRD is a CRD with an enum field, in the versions given as
// "name:served:storage" (e.g. "v1:true:true"), with storedVersions.
func gizmoCRD(t *testing.T, enum string, stored []string, versions ...string) *unstructured.Unstructured {
	t.Helper()
	var vs strings.Builder
	for _, v := range versions {
		parts := strings.Split(v, ":")
		fmt.Fprintf(&vs, `
  - name: %s
    served: %s
    storage: %s
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string, enum: [%s]}}}`, parts[0], parts[1], parts[2], enum)
	}
	doc := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.annex.dev
  labels: {from: chart}
spec:
  group: example.annex.dev
  names: {kind: Gizmo, plural: gizmos}
  scope: Namespaced
  versions:` + vs.String() + "\n"
	if len(stored) > 0 {
		doc += "status: {storedVersions: [" + strings.Join(stored, ", ") + "]}\n"
	}
	return parse(t, doc)
}

func classes(findings []Finding) []Class {
	out := make([]Class, len(findings))
	for i, f := range findings {
		out[i] = f.Class
	}
	return out
}

// Judge turns the findings and spec.upgrade.crdPolicy into
// what the gate does, for every CRD a change brings.
func TestJudgeCRDs(t *testing.T) {
	installed := gizmoCRD(t, "red, green, blue", []string{"v1"}, "v1:true:true")
	narrowed := gizmoCRD(t, "red, green", nil, "v1:true:true")
	widened := gizmoCRD(t, "red, green, blue, black", nil, "v1:true:true")
	// v2 becomes the storage version; v1 is kept, no longer served.
	moved := gizmoCRD(t, "red, green, blue", nil, "v1:false:false", "v2:true:true")
	// v1 dropped while objects are stored at it.
	dropped := gizmoCRD(t, "red, green, blue", nil, "v2:true:true")
	cm := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gizmos.example.annex.dev}\n")

	cases := []struct {
		name      string
		policy    Policy
		proposed  *unstructured.Unstructured
		installed bool
		refused   []Class
		report    []Class
		kept      bool
	}{
		// A first install of the CRD: nothing to compare, under any policy.
		{name: "new CRD", policy: Strict, proposed: narrowed},
		{name: "new CRD, skip", policy: Skip, proposed: narrowed},
		// A compatible change goes on silently.
		{name: "widened enum", policy: Strict, proposed: widened, installed: true},
		// Strict refuses a narrowed enum and reports nothing as applied.
		{name: "strict narrowed", policy: Strict, proposed: narrowed, installed: true, refused: []Class{EnumNarrowed}},
		// The unset policy is Strict.
		{name: "default narrowed", policy: "", proposed: narrowed, installed: true, refused: []Class{EnumNarrowed}},
		// Warn and Force apply it and report it.
		{name: "warn narrowed", policy: Warn, proposed: narrowed, installed: true, report: []Class{EnumNarrowed}},
		{name: "force narrowed", policy: Force, proposed: narrowed, installed: true, report: []Class{EnumNarrowed}},
		// Skip keeps the installed CRD and reports what it kept out.
		{name: "skip narrowed", policy: Skip, proposed: narrowed, installed: true, report: []Class{EnumNarrowed}, kept: true},
		// Skip keeps the installed CRD even when nothing breaks, as Helm does.
		{name: "skip widened", policy: Skip, proposed: widened, installed: true, kept: true},
		// A version no longer served is breaking for Strict only.
		{name: "strict moves storage", policy: Strict, proposed: moved, installed: true, refused: []Class{ServedVersionRemoved}},
		{name: "warn moves storage", policy: Warn, proposed: moved, installed: true, report: []Class{ServedVersionRemoved}},
		// A stored version removed is refused under Force too (the API
		// server would refuse it), named with the served version removed.
		{name: "force drops stored", policy: Force, proposed: dropped, installed: true, refused: []Class{StoredVersionRemoved}},
		{name: "strict drops stored", policy: Strict, proposed: dropped, installed: true,
			refused: []Class{StoredVersionRemoved, ServedVersionRemoved}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			live := map[string]*unstructured.Unstructured{}
			if tc.installed {
				live[installed.GetName()] = installed
			}
			// A ConfigMap of the same name is no CRD: never compared.
			proposed := In([]*unstructured.Unstructured{cm, tc.proposed})
			j, err := Judge(tc.policy, proposed, live)
			if err != nil {
				t.Fatal(err)
			}
			if got := classes(j.Refused); !slices.Equal(got, tc.refused) {
				t.Errorf("refused %v, want %v", got, tc.refused)
			}
			if got := classes(j.Report); !slices.Equal(got, tc.report) {
				t.Errorf("report %v, want %v", got, tc.report)
			}
			if kept := j.Keep[installed.GetName()] != nil; kept != tc.kept {
				t.Errorf("kept %v, want %v", kept, tc.kept)
			}
		})
	}
}

// The refusal names the change, the CRD, the version, the field and the
// policy, and says what to do; a removed stored version asks for the
// migration path instead of a policy.
func TestCRDMessages(t *testing.T) {
	installed := map[string]*unstructured.Unstructured{"gizmos.example.annex.dev": gizmoCRD(t, "red, green, blue", []string{"v1"}, "v1:true:true")}
	narrowed := gizmoCRD(t, "red, green", nil, "v1:true:true")
	j, err := Judge(Strict, []*unstructured.Unstructured{narrowed}, installed)
	if err != nil {
		t.Fatal(err)
	}
	msg := RefusalMessage("gizmo 2.0.0", j)
	for _, want := range []string{"gizmo 2.0.0", "CRD gizmos.example.annex.dev version v1 field .spec.color", `"blue"`,
		"nothing of it was applied", "spec.upgrade.crdPolicy: Strict", "spec.upgrade.crdPolicy: Force"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q lacks %q", msg, want)
		}
	}
	if again := RefusalMessage("gizmo 2.0.0", j); again != msg {
		t.Errorf("the same change must get the same words:\n%s\n%s", msg, again)
	}

	dropped := gizmoCRD(t, "red, green, blue", nil, "v2:true:true")
	j, err = Judge(Force, []*unstructured.Unstructured{dropped}, installed)
	if err != nil {
		t.Fatal(err)
	}
	msg = RefusalMessage("gizmo 3.0.0", j)
	for _, want := range []string{"CRD gizmos.example.annex.dev version v1", "status.storedVersions", "under any policy", "new storage version"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q lacks %q", msg, want)
		}
	}

	j, err = Judge(Skip, []*unstructured.Unstructured{narrowed}, installed)
	if err != nil {
		t.Fatal(err)
	}
	if msg := ReportMessage("gizmo 2.0.0", j); !strings.Contains(msg, "kept the installed CustomResourceDefinitions gizmos.example.annex.dev") || !strings.Contains(msg, ".spec.color") {
		t.Errorf("skip report: %q", msg)
	}
	j, err = Judge(Force, []*unstructured.Unstructured{narrowed}, installed)
	if err != nil {
		t.Fatal(err)
	}
	if msg := ReportMessage("gizmo 2.0.0", j); !strings.Contains(msg, "forced by spec.upgrade.crdPolicy: Force") {
		t.Errorf("force report: %q", msg)
	}
}

// Skip applies the installed CRD's spec under the release's metadata, in
// a chart's objects and in the Apply tasks of plans, leaving the
// release's own objects as they were.
func TestKeepInstalledCRDs(t *testing.T) {
	installed := gizmoCRD(t, "red, green, blue", []string{"v1"}, "v1:true:true")
	installed.SetResourceVersion("42")
	proposed := gizmoCRD(t, "red, green", nil, "v1:true:true")
	cm := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	j, err := Judge(Skip, []*unstructured.Unstructured{proposed}, map[string]*unstructured.Unstructured{installed.GetName(): installed})
	if err != nil {
		t.Fatal(err)
	}
	objs := []*unstructured.Unstructured{cm, proposed}
	out := WithKept(objs, j.Keep)
	kept := out[1]
	if out[0] != cm || objs[1] != proposed {
		t.Fatal("WithKept must replace only the CRD, in a new slice")
	}
	enum, _, _ := unstructured.NestedSlice(kept.Object, "spec", "versions")
	if len(enum) != 1 || !strings.Contains(fmt.Sprint(enum[0]), "blue") {
		t.Errorf("kept spec is not the installed one: %v", enum)
	}
	if kept.GetLabels()["from"] != "chart" || kept.GetResourceVersion() != "" || kept.Object["status"] != nil {
		t.Errorf("kept metadata: %v", kept.Object["metadata"])
	}

	plans := []plan.Plan{{Name: "deploy", Phases: []plan.Phase{{Name: "main", Steps: []plan.Step{{Name: "crds", Tasks: []plan.Task{
		{Name: "crds", Kind: plan.TaskApply, Objects: []*unstructured.Unstructured{proposed, cm}},
	}}}}}}}
	rewritten := plan.RewriteApplies(plans, func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		return WithKept(objs, j.Keep)
	})
	if got := rewritten[0].Phases[0].Steps[0].Tasks[0].Objects; got[0] != kept || got[1] != cm {
		t.Errorf("plan task applies %v", got)
	}
	if plans[0].Phases[0].Steps[0].Tasks[0].Objects[0] != proposed {
		t.Error("plan.RewriteApplies changed the plans it was given")
	}
}

func parse(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}
