package installation_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// secondNamespace creates another namespace for a test, next to the one
// setup made.
func secondNamespace(t *testing.T, ns string) string {
	t.Helper()
	other := ns + "-b"
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	return other
}

// Two installations of a chart whose content is namespaced only run two
// versions side by side, in two namespaces: the second, which cannot
// share the version the first runs, runs its own, as an instance, and
// both are Ready.
func TestInstancesSideBySide(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("instapp", "1.0.0", nil), podinfoChart("instapp", "2.0.0", nil))
	nsB := secondNamespace(t, ns)

	a := install(t, ns, "app", "instapp", "^1")
	waitCondition(t, a, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	b := install(t, nsB, "app", "instapp", "^2")
	waitCondition(t, b, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)

	var current []*v1alpha1.ExtensionInstallation
	for _, tc := range []struct {
		inst    *v1alpha1.ExtensionInstallation
		version string
		apart   bool
	}{{a, "1.0.0", false}, {b, "2.0.0", true}} {
		got := waitCondition(t, tc.inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		current = append(current, got)
		if got.Status.InstalledVersion != tc.version {
			t.Errorf("%s/%s: installed %q, want %s", got.Namespace, got.Name, got.Status.InstalledVersion, tc.version)
		}
		if c := got.Status.Content; c == nil || c.Version != tc.version || c.ClusterScoped != nil || c.ObservedGeneration != got.Generation {
			t.Errorf("%s/%s: status.content %+v, want %s namespaced only", got.Namespace, got.Name, c, tc.version)
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionResolved)
		apart := c != nil && strings.HasSuffix(c.Message, "; a version of its own, apart from the other installations of instapp: its content is namespaced only")
		if apart != tc.apart {
			t.Errorf("%s/%s: Resolved %q, want apart %v", got.Namespace, got.Name, c.Message, tc.apart)
		}
		cm, err := get(t, configMapGVK, got.Namespace, "app-config")
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(cm.Object, "data", "version"); v != tc.version {
			t.Errorf("%s/app-config: version %q, want %s", got.Namespace, v, tc.version)
		}
	}

	// Resolved again as they are now, both keep their versions.
	ext := &v1alpha1.Extension{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "instapp"}, ext); err != nil {
		t.Fatal(err)
	}
	plan := resolve.NewIndex(resolve.UniverseOf([]v1alpha1.Extension{*ext})).Solve(resolve.ProblemFor(current[0].Status.ClusterVersion, current))
	for _, inst := range current {
		if sel, ok := plan.For("instapp", inst.Namespace+"/"+inst.Name); !ok || sel.Version.Version != inst.Status.InstalledVersion {
			t.Errorf("%s/%s: resolved %+v, runs %s; failed: %v", inst.Namespace, inst.Name, sel, inst.Status.InstalledVersion, plan.Failed)
		}
	}
}

// gadgetChart brings a CRD (cluster-scoped) and a ConfigMap; the CRD
// carries the chart's version in an annotation.
func gadgetChart(name, version string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: version, Files: map[string]string{
		"crds/gadget.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.instances.annex.dev
  annotations: {instances.annex.dev/chart-version: "` + version + `"}
spec:
  group: instances.annex.dev
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`,
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata: {version: {{ .Chart.Version | quote }}}\n",
	}}
}

// A chart with a CRD at two versions: the second installation, which
// wants the other version, is stopped before anything of it is applied,
// and its explanation names the CRD that forces one version.
func TestClusterScopedContentForcesOneVersion(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, gadgetChart("gadgets", "1.0.0"), gadgetChart("gadgets", "2.0.0"))
	nsB := secondNamespace(t, ns)

	a := install(t, ns, "gadgets", "gadgets", "^1")
	gotA := waitCondition(t, a, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	crdRef := v1alpha1.ObjectReference{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "gadgets.instances.annex.dev"}
	if c := gotA.Status.Content; c == nil || c.Version != "1.0.0" || c.ClusterScoped == nil || *c.ClusterScoped != crdRef {
		t.Fatalf("status.content of %s/gadgets: %+v", ns, c)
	}
	// What runs is shared: its Resolved condition says nothing of an
	// instance.
	if c := meta.FindStatusCondition(gotA.Status.Conditions, v1alpha1.ConditionResolved); c == nil || strings.Contains(c.Message, "of its own") {
		t.Errorf("Resolved of %s/gadgets: %+v", ns, c)
	}

	// A new installation is resolved on its own until its content is
	// known; rendered, it has the CRD, and a.Status says 1.0.0 runs: it
	// stops, naming the CRD, and applies nothing.
	b := install(t, nsB, "gadgets", "gadgets", "^2")
	assertEvent(t, nsB, "gadgets", v1alpha1.ReasonNoMatchingVersion,
		"gadgets 2.0.0 has the cluster-scoped CustomResourceDefinition gadgets.instances.annex.dev, so one version of gadgets serves the whole cluster, and "+
			ns+"/gadgets runs 1.0.0; set spec.version of "+nsB+"/gadgets, or of "+ns+"/gadgets, so that they share a version. Nothing of gadgets 2.0.0 was applied.")

	// Resolved again with the content known, it shares the version; the
	// resolver's explanation names the CRD.
	want := "(one version of gadgets serves the whole cluster: gadgets 2.0.0 has the cluster-scoped CustomResourceDefinition gadgets.instances.annex.dev)"
	got := &v1alpha1.ExtensionInstallation{}
	eventually(t, 60*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionResolved)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNoMatchingVersion || !strings.Contains(c.Message, want) {
			return fmt.Errorf("Resolved of %s/gadgets: %s", nsB, describeConditions(got))
		}
		return nil
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready of %s/gadgets: %s", nsB, describeConditions(got))
	}
	if c := got.Status.Content; c == nil || c.Version != "2.0.0" || c.ClusterScoped == nil || *c.ClusterScoped != crdRef {
		t.Errorf("status.content of %s/gadgets: %+v", nsB, c)
	}
	if got.Status.InstalledVersion != "" || len(got.Status.Inventory) != 0 {
		t.Errorf("%s/gadgets applied something: installed %q, inventory %+v", nsB, got.Status.InstalledVersion, got.Status.Inventory)
	}
	if _, err := get(t, configMapGVK, nsB, "gadgets-config"); !apierrors.IsNotFound(err) {
		t.Errorf("%s/gadgets-config exists (err=%v)", nsB, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "gadgets.instances.annex.dev"}, crd); err != nil {
		t.Fatal(err)
	}
	if v := crd.Annotations["instances.annex.dev/chart-version"]; v != "1.0.0" {
		t.Errorf("the CRD is of chart %s, want 1.0.0", v)
	}
	// The first installation runs on, untouched.
	gotA = waitCondition(t, a, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if gotA.Status.InstalledVersion != "1.0.0" {
		t.Errorf("%s/gadgets runs %q", ns, gotA.Status.InstalledVersion)
	}

}
