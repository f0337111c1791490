package installation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// depChart renders one ConfigMap named after the release and declares
// Annex dependencies as "name@range" pairs.
func depChart(name, version string, deps ...string) helmrepo.Chart {
	c := helmrepo.Chart{Name: name, Version: version, Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {chart: {{ .Chart.Name }}}\n",
	}}
	if len(deps) > 0 {
		var b strings.Builder
		for _, d := range deps {
			name, rng, _ := strings.Cut(d, "@")
			fmt.Fprintf(&b, "- name: %s\n  version: %q\n", name, rng)
		}
		c.Annotations = map[string]string{v1alpha1.AnnotationDependencies: b.String()}
	}
	return c
}

func getInstallation(t *testing.T, ns, name string) (*v1alpha1.ExtensionInstallation, error) {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, inst)
	return inst, err
}

// creationRevision is the etcd revision at which a ConfigMap was created;
// revisions grow monotonically, so they order creations within one test.
func creationRevision(t *testing.T, ns, name string) int {
	t.Helper()
	cm, err := get(t, configMapGVK, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.Atoi(cm.GetResourceVersion())
	if err != nil {
		t.Fatal(err)
	}
	return rv
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		if inst, err := getInstallation(t, ns, name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("installation %s/%s still present (err=%v): %s", ns, name, err, describeConditions(inst))
		}
		return nil
	})
}

func TestDependencyChainInstalledInOrder(t *testing.T) {
	ns, _ := setup(t,
		depChart("chain-a", "1.0.0", "chain-b@^1"),
		depChart("chain-b", "1.0.0", "chain-c@>=2.0.0"),
		depChart("chain-c", "1.0.0"), depChart("chain-c", "2.1.0"),
	)
	a := install(t, ns, "chain-a", "chain-a", "")
	waitCondition(t, a, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	// b and c were added as installations of their own, visible and labelled.
	for _, name := range []string{"chain-b", "chain-c"} {
		inst, err := getInstallation(t, ns, name)
		if err != nil {
			t.Fatalf("dependency %s was not added: %v", name, err)
		}
		if inst.Labels[v1alpha1.LabelAddedFor] != "dependencies" || len(inst.OwnerReferences) != 1 {
			t.Fatalf("%s: labels %v owners %v", name, inst.Labels, inst.OwnerReferences)
		}
		waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	}
	c, _ := getInstallation(t, ns, "chain-c")
	if c.Status.InstalledVersion != "2.1.0" || strings.Join(c.Status.RequiredBy, ",") != ns+"/chain-b" {
		t.Fatalf("chain-c: version %s requiredBy %v", c.Status.InstalledVersion, c.Status.RequiredBy)
	}
	// Nothing was applied before its dependencies: c, then b, then a.
	rc, rb, ra := creationRevision(t, ns, "chain-c"), creationRevision(t, ns, "chain-b"), creationRevision(t, ns, "chain-a")
	if !(rc < rb && rb < ra) {
		t.Fatalf("applied out of order: c@%d b@%d a@%d", rc, rb, ra)
	}

	// Deleting a uninstalls the chain: dependents first, then what they needed.
	if err := env.Client.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chain-a", "chain-b", "chain-c"} {
		waitGone(t, ns, name)
		if _, err := get(t, configMapGVK, ns, name); !apierrors.IsNotFound(err) {
			t.Fatalf("%s's ConfigMap is still there (err=%v)", name, err)
		}
	}
}

func TestSharedDependencyStaysUntilLastDependentGoes(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, depChart("share-x", "1.0.0", "share-d@^1"), depChart("share-y", "1.0.0", "share-d@>=1.1"),
		depChart("share-d", "1.0.0"), depChart("share-d", "1.1.0"))
	x := install(t, ns, "share-x", "share-x", "")
	y := install(t, ns, "share-y", "share-y", "")
	waitCondition(t, x, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, y, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	d, err := getInstallation(t, ns, "share-d")
	if err != nil {
		t.Fatal(err)
	}
	d = waitCondition(t, d, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if d.Status.InstalledVersion != "1.1.0" {
		t.Fatalf("share-d %s, want 1.1.0 (the highest that satisfies both ^1 and >=1.1)", d.Status.InstalledVersion)
	}

	if err := env.Client.Delete(ctx, x); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "share-x")
	eventually(t, 30*time.Second, func() error {
		d, err := getInstallation(t, ns, "share-d")
		if err != nil {
			return err
		}
		if strings.Join(d.Status.RequiredBy, ",") != ns+"/share-y" {
			return fmt.Errorf("share-d requiredBy %v", d.Status.RequiredBy)
		}
		return nil
	})
	if _, err := get(t, configMapGVK, ns, "share-d"); err != nil {
		t.Fatalf("the shared dependency must stay while share-y needs it: %v", err)
	}

	if err := env.Client.Delete(ctx, y); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "share-y")
	waitGone(t, ns, "share-d") // released once nobody needs it
	if _, err := get(t, configMapGVK, ns, "share-d"); !apierrors.IsNotFound(err) {
		t.Fatalf("share-d's objects must go with it (err=%v)", err)
	}
}

func TestDeletingANeededInstallationIsHeld(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, depChart("hold-app", "1.0.0", "hold-lib@*"), depChart("hold-lib", "1.0.0"))
	lib := install(t, ns, "hold-lib", "hold-lib", "")
	app := install(t, ns, "hold-app", "hold-app", "")
	waitCondition(t, app, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	if err := env.Client.Delete(ctx, lib); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got, err := getInstallation(t, ns, "hold-lib")
		if err != nil {
			return err
		}
		ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Reason != v1alpha1.ReasonDeletionHeld {
			return fmt.Errorf("conditions: %s", describeConditions(got))
		}
		want := fmt.Sprintf("deletion held: hold-lib still needed by %s/hold-app (hold-app 1.0.0); "+
			"delete those first, or together with this one (dependents are uninstalled first)", ns)
		if ready.Message != want {
			return fmt.Errorf("message\n got: %s\nwant: %s", ready.Message, want)
		}
		return nil
	})
	if _, err := get(t, configMapGVK, ns, "hold-lib"); err != nil {
		t.Fatalf("a held installation keeps its objects: %v", err)
	}

	if err := env.Client.Delete(ctx, app); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "hold-app")
	waitGone(t, ns, "hold-lib")
}

// The same extension on the hub and on a ManagedCluster, from one
// namespace: each gets its own installation of the dependency, named for
// its cluster, and uninstalling one leaves the other's alone.
func TestDependenciesPerCluster(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, depChart("fleet-app", "1.0.0", "fleet-lib@^1"), depChart("fleet-lib", "1.0.0"))
	edge := testenv.Start(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := edge.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge-kubeconfig"}, Data: map[string][]byte{"kubeconfig": data}},
		&v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: ns + "-edge"}, Spec: v1alpha1.ManagedClusterSpec{
			KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: ns, Name: "edge-kubeconfig", Key: "kubeconfig"}}},
	} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// The namespace exists on the edge cluster: it is nobody's inventory.
	// (Annex creates a missing one, but the test API server has no
	// namespace controller to finish deleting it.)
	if err := edge.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	hub := install(t, ns, "app-hub", "fleet-app", "")
	remote := install(t, ns, "app-edge", "fleet-app", "", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Cluster = ns + "-edge" })
	waitCondition(t, hub, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	waitCondition(t, remote, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	libEdge := "fleet-lib-" + ns + "-edge"
	for name, cluster := range map[string]string{"fleet-lib": "", libEdge: ns + "-edge"} {
		inst, err := getInstallation(t, ns, name)
		if err != nil {
			t.Fatalf("dependency %s was not added: %v", name, err)
		}
		if inst.Spec.Cluster != cluster || inst.Spec.Extension != "fleet-lib" {
			t.Fatalf("%s: extension %s on cluster %q, want fleet-lib on %q", name, inst.Spec.Extension, inst.Spec.Cluster, cluster)
		}
		waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	}
	// Each dependency's objects are on its own cluster.
	if err := edge.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: libEdge}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the edge dependency's ConfigMap on the edge cluster: %v", err)
	}
	if _, err := get(t, configMapGVK, ns, "fleet-lib"); err != nil {
		t.Fatalf("the hub dependency's ConfigMap on the hub: %v", err)
	}

	if err := env.Client.Delete(ctx, remote); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "app-edge")
	waitGone(t, ns, libEdge)

	if got, err := getInstallation(t, ns, "fleet-lib"); err != nil || !got.DeletionTimestamp.IsZero() {
		t.Fatalf("the hub's dependency must stay while app-hub needs it (err=%v)", err)
	}
}

// An installation that no version fits any more keeps running what it
// has, and so what it has keeps its dependencies: they are not released.
func TestUnresolvableInstallationKeepsItsDependencies(t *testing.T) {
	ns, _ := setup(t, depChart("keep-app", "1.0.0", "keep-dep@^1"), depChart("keep-app", "2.0.0", "keep-dep@^1"), depChart("keep-dep", "1.0.0"))
	app := install(t, ns, "keep-app", "keep-app", "")
	app = waitCondition(t, app, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if app.Status.InstalledVersion != "2.0.0" {
		t.Fatalf("keep-app %s, want 2.0.0", app.Status.InstalledVersion)
	}
	// 1.x is a downgrade, which spec.upgrade does not allow: no version fits.
	update(t, ns, "keep-app", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "1.x" })
	eventually(t, 30*time.Second, func() error {
		cur, err := getInstallation(t, ns, "keep-app")
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != cur.Generation {
			return fmt.Errorf("keep-app not refused yet: %s", describeConditions(cur))
		}
		return nil
	})
	// A few reconciles later the dependency is still there, needed.
	for range 10 {
		dep, err := getInstallation(t, ns, "keep-dep")
		if err != nil || dep.DeletionTimestamp != nil {
			t.Fatalf("keep-dep was released while keep-app 2.0.0 still runs: %v", err)
		}
		if strings.Join(dep.Status.RequiredBy, ",") != ns+"/keep-app" {
			t.Fatalf("keep-dep requiredBy %v, want %s/keep-app", dep.Status.RequiredBy, ns)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
