package installation_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// enumChart brings, in crds/, a CRD whose spec.color takes the values
// of enum, and a ConfigMap saying the chart's version.
func enumChart(version, enum string) helmrepo.Chart {
	return helmrepo.Chart{Name: "crdenum", Version: version, Files: map[string]string{
		"crds/gizmo.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.crdpolicy.annex.dev
spec:
  group: crdpolicy.annex.dev
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string, enum: [` + enum + `]}
`,
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  version: {{ .Chart.Version | quote }}\n",
	}}
}

// readCRD reads a CRD of the test cluster.
func readCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

// setSpec changes the installation's spec and returns it as written.
func setSpec(t *testing.T, inst *v1alpha1.ExtensionInstallation, mutate func(*v1alpha1.ExtensionInstallation)) *v1alpha1.ExtensionInstallation {
	t.Helper()
	patch := client.MergeFrom(inst.DeepCopy())
	mutate(inst)
	if err := env.Client.Patch(context.Background(), inst, patch); err != nil {
		t.Fatal(err)
	}
	return inst
}

// assertMentions fails unless msg holds every fragment.
func assertMentions(t *testing.T, what, msg string, fragments ...string) {
	t.Helper()
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("%s %q does not mention %q", what, msg, f)
		}
	}
}

// A chart upgrade whose crds/ narrows an enum: refused under Strict (the
// default) before anything is applied, naming the CRD, the version and
// the field, with the installed CRD and the installed version as they
// were; applied once spec.upgrade.crdPolicy is Force, with the Warnings
// condition saying what was forced past.
func TestCRDPolicyNarrowedEnum(t *testing.T) {
	const crdName = "gizmos.crdpolicy.annex.dev"
	ns, _ := setup(t, enumChart("1.0.0", "red, green, blue"), enumChart("2.0.0", "red, green"))
	inst := install(t, ns, "gizmos", "crdenum", "1.0.0")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Spec.Upgrade.CRDPolicy != v1alpha1.CRDPolicyStrict {
		t.Fatalf("spec.upgrade.crdPolicy defaults to %q, want Strict", got.Spec.Upgrade.CRDPolicy)
	}

	got = setSpec(t, got, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "2.0.0" })
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonUnsafeCRDChange)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	assertMentions(t, "refusal", ready.Message, "crdenum 2.0.0", "CRD "+crdName+" version v1 field .spec.color", `"blue"`,
		"nothing of it was applied", "spec.upgrade.crdPolicy: Force")
	if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionStalled) {
		t.Errorf("a refused CRD change is terminal: %s", describeConditions(got))
	}
	if got.Status.InstalledVersion != "1.0.0" {
		t.Errorf("installed version %q after the refusal, want 1.0.0", got.Status.InstalledVersion)
	}
	if v := configMapVersion(t, ns, "gizmos"); v != "1.0.0" {
		t.Errorf("the refused upgrade applied its ConfigMap (version %s)", v)
	}
	if enum := readCRD(t, crdName).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"].Enum; len(enum) != 3 {
		t.Errorf("the refused upgrade changed the CRD: enum %s", enum)
	}
	// status.crdChanges holds the findings, for the console's page.
	if r := got.Status.CRDChanges; r == nil || r.Version != "2.0.0" || r.Policy != v1alpha1.CRDPolicyStrict || r.Outcome != v1alpha1.CRDChangeRefused ||
		len(r.Findings) != 1 || r.Findings[0].CRD != crdName || r.Findings[0].Version != "v1" || r.Findings[0].Path != ".spec.color" ||
		r.Findings[0].Class != "EnumNarrowed" || !strings.Contains(r.Findings[0].Message, `"blue"`) {
		t.Errorf("status.crdChanges = %+v", r)
	}
	// annexctl preflight shows the held change with its findings.
	observe := func(context.Context, string) (string, error) { return got.Status.ClusterVersion, nil }
	view, err := cli.PreflightData(context.Background(), env.Client, observe, cli.PreflightOptions{KubeVersion: strings.TrimPrefix(got.Status.ClusterVersion, "v")})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(view.CRDChanges, func(c cli.CRDChangeView) bool { return c.Installation == ns+"/gizmos" })
	if i < 0 || !view.CRDChanges[i].Held || view.CRDChanges[i].Message != ready.Message {
		t.Errorf("preflight's CRD changes: %+v", view.CRDChanges)
	}

	got = setSpec(t, got, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Upgrade.CRDPolicy = v1alpha1.CRDPolicyForce })
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "2.0.0" || configMapVersion(t, ns, "gizmos") != "2.0.0" {
		t.Errorf("under Force: installed %q, ConfigMap of %s", got.Status.InstalledVersion, configMapVersion(t, ns, "gizmos"))
	}
	if enum := readCRD(t, crdName).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"].Enum; len(enum) != 2 {
		t.Errorf("under Force the CRD keeps enum %s", enum)
	}
	warnings := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionWarnings)
	if warnings == nil || warnings.Reason != v1alpha1.ReasonCRDChangeWarnings {
		t.Fatalf("no CRD warnings after Force: %s", describeConditions(got))
	}
	assertMentions(t, "warnings", warnings.Message, "forced by spec.upgrade.crdPolicy: Force", ".spec.color")
	if r := got.Status.CRDChanges; r == nil || r.Outcome != v1alpha1.CRDChangeApplied || r.Policy != v1alpha1.CRDPolicyForce || len(r.Findings) != 1 {
		t.Errorf("status.crdChanges after Force = %+v", r)
	}
}

// versionsChart brings a CRD of Things in the versions given as
// "name:served:storage", and one Thing at thingVersion.
func versionsChart(version, thingVersion string, versions ...string) helmrepo.Chart {
	var vs strings.Builder
	for _, v := range versions {
		p := strings.Split(v, ":")
		fmt.Fprintf(&vs, `
  - name: %s
    served: %s
    storage: %s
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}`, p[0], p[1], p[2])
	}
	return helmrepo.Chart{Name: "crdversions", Version: version, Files: map[string]string{
		"crds/thing.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.crdpolicy.annex.dev
spec:
  group: crdpolicy.annex.dev
  names: {kind: Thing, plural: things, singular: thing, listKind: ThingList}
  scope: Namespaced
  versions:` + vs.String() + "\n",
		"templates/thing.yaml": "apiVersion: crdpolicy.annex.dev/" + thingVersion + "\nkind: Thing\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  size: 3\n",
	}}
}

// Retiring a stored version: an upgrade that drops v1 while objects are
// stored at it is refused, under Warn too, naming the version; after a
// version whose CRD moves the storage version to v2 (v1 kept, no longer
// served), Annex writes the stored objects back at v2 and trims
// status.storedVersions to v2, and the upgrade that drops v1 goes on.
func TestCRDStoredVersionRetired(t *testing.T) {
	const crdName = "things.crdpolicy.annex.dev"
	ns, _ := setup(t,
		versionsChart("1.0.0", "v1", "v1:true:true"),
		versionsChart("2.0.0", "v2", "v1:false:false", "v2:true:true"),
		versionsChart("3.0.0", "v2", "v2:true:true"))
	inst := install(t, ns, "things", "crdversions", "1.0.0", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Upgrade.CRDPolicy = v1alpha1.CRDPolicyWarn
	})
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if sv := readCRD(t, crdName).Status.StoredVersions; !slices.Equal(sv, []string{"v1"}) {
		t.Fatalf("stored versions after install: %v", sv)
	}
	// A Thing of someone else's, stored at v1, which no apply of the
	// chart rewrites: only the migration does.
	extra := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "crdpolicy.annex.dev/v1", "kind": "Thing",
		"metadata": map[string]any{"name": "extra", "namespace": ns}, "spec": map[string]any{"size": int64(1)},
	}}
	if err := env.Client.Create(context.Background(), extra); err != nil {
		t.Fatal(err)
	}

	got = setSpec(t, got, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "3.0.0" })
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonUnsafeCRDChange)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	assertMentions(t, "refusal", ready.Message, "crdversions 3.0.0", "CRD "+crdName+" version v1: removed, but objects are still stored at it",
		"status.storedVersions", "under any policy")
	if got.Status.InstalledVersion != "1.0.0" {
		t.Errorf("installed version %q after the refusal, want 1.0.0", got.Status.InstalledVersion)
	}
	if crd := readCRD(t, crdName); len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1" {
		t.Errorf("the refused upgrade changed the CRD: %+v", crd.Spec.Versions)
	}

	got = setSpec(t, got, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "2.0.0" })
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "2.0.0" {
		t.Fatalf("installed %q, want 2.0.0", got.Status.InstalledVersion)
	}
	eventually(t, 60*time.Second, func() error {
		crd := readCRD(t, crdName)
		if !slices.Equal(crd.Status.StoredVersions, []string{"v2"}) {
			return fmt.Errorf("status.storedVersions %v, want [v2] once the objects are migrated", crd.Status.StoredVersions)
		}
		return nil
	})
	// Written back at v2: a write that changes the stored bytes moves the
	// resourceVersion (an unchanged one is not stored again).
	thingV2 := schema.GroupVersionKind{Group: "crdpolicy.annex.dev", Version: "v2", Kind: "Thing"}
	if migrated, err := get(t, thingV2, ns, "extra"); err != nil || migrated.GetResourceVersion() == extra.GetResourceVersion() {
		t.Errorf("the Thing stored at v1 was not written back (err %v)", err)
	}
	warnings := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionWarnings)
	if warnings == nil || !strings.Contains(warnings.Message, "version v1: no longer served") {
		t.Errorf("Warn lists what it applied: %s", describeConditions(got))
	}

	got = setSpec(t, got, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "3.0.0" })
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if got.Status.InstalledVersion != "3.0.0" {
		t.Fatalf("installed %q, want 3.0.0", got.Status.InstalledVersion)
	}
	crd := readCRD(t, crdName)
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v2" || !slices.Equal(crd.Status.StoredVersions, []string{"v2"}) {
		t.Errorf("after the removal: versions %+v, stored %v", crd.Spec.Versions, crd.Status.StoredVersions)
	}
	if _, err := get(t, thingV2, ns, "things"); err != nil {
		t.Errorf("the Thing stored at v1 is not readable at v2: %v", err)
	}
}

// crdPackage is a KUDO-format package whose deploy plan applies a CRD
// whose spec.color takes the values of enum, then a ConfigMap saying the
// package's version.
func crdPackage(version, enum string) map[string]string {
	return map[string]string{
		"operator.yaml": `apiVersion: kudo.dev/v1beta1
name: crdpkg
operatorVersion: ` + version + `
appVersion: "1.0"
kubernetesVersion: 1.30.0
tasks:
  - name: crds
    kind: Apply
    spec: {resources: [crd.yaml]}
  - name: app
    kind: Apply
    spec: {resources: [app.yaml]}
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: crds, tasks: [crds]}
          - {name: app, tasks: [app]}
`,
		"params.yaml": "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
		"templates/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.crdpkg.annex.dev
spec:
  group: crdpkg.annex.dev
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string, enum: [` + enum + `]}
`,
		"templates/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\ndata:\n  version: {{ .OperatorVersion | quote }}\n",
	}
}

// The same gate for a package's plans: an upgrade whose plan applies a
// narrowed CRD is refused under Strict before any step runs; under Skip
// the upgrade's plan runs with the installed CRD kept, and says so.
func TestCRDPolicyPackageSkip(t *testing.T) {
	const crdName = "widgets.crdpkg.annex.dev"
	colors := func() int {
		return len(readCRD(t, crdName).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"].Enum)
	}
	ns := packageNamespace(t)
	dir := t.TempDir()
	writePackage(t, dir, "crdpkg-0.1.0", crdPackage("0.1.0", "red, green, blue"))
	writePackage(t, dir, "crdpkg-0.2.0", crdPackage("0.2.0", "red, green"))
	setupDirectoryCatalog(t, ns, dir)

	inst := install(t, ns, "widgets", "crdpkg", "0.1.0")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	got = setSpec(t, got, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "0.2.0" })
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonUnsafeCRDChange)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	assertMentions(t, "refusal", ready.Message, "crdpkg 0.2.0", "CRD "+crdName+" version v1 field .spec.color")
	if v := configMapData(t, ns, "widgets-config", "version"); v != "0.1.0" || colors() != 3 || got.Status.InstalledVersion != "0.1.0" {
		t.Errorf("the refused upgrade applied something: ConfigMap of %s, %d colors, installed %s", v, colors(), got.Status.InstalledVersion)
	}

	got = setSpec(t, got, func(i *v1alpha1.ExtensionInstallation) { i.Spec.Upgrade.CRDPolicy = v1alpha1.CRDPolicySkip })
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if v := configMapData(t, ns, "widgets-config", "version"); v != "0.2.0" || got.Status.InstalledVersion != "0.2.0" {
		t.Errorf("under Skip: ConfigMap of %s, installed %s", v, got.Status.InstalledVersion)
	}
	if n := colors(); n != 3 {
		t.Errorf("under Skip the installed CRD changed: %d colors", n)
	}
	warnings := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionWarnings)
	if warnings == nil {
		t.Fatalf("Skip says nothing: %s", describeConditions(got))
	}
	assertMentions(t, "warnings", warnings.Message, "kept the installed CustomResourceDefinitions "+crdName, ".spec.color")
	// The CRD stays the installation's.
	found := false
	for _, ref := range got.Status.Inventory {
		found = found || (ref.Kind == "CustomResourceDefinition" && ref.Name == crdName)
	}
	if !found {
		t.Errorf("the kept CRD left the inventory: %+v", got.Status.Inventory)
	}
}
