package profile_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/names"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/testenv/withmanager"
)

var env *testenv.Env

func TestMain(m *testing.M) { withmanager.Main(m, &env) }

// TestProfile gives the hub and a managed cluster two extensions, one
// Default and one Enforced, edits and deletes them by hand, then stops
// the cluster from matching and deletes the profile.
func TestProfile(t *testing.T) {
	ctx := context.Background()
	const ns = "fleet"
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {v: {{ .Chart.Version | quote }}}\n"
	var charts []helmrepo.Chart
	for _, name := range []string{"p-app", "p-tool"} {
		for _, v := range []string{"1.0.0", "2.0.0"} {
			charts = append(charts, helmrepo.Chart{Name: name, Version: v, Files: map[string]string{"templates/cm.yaml": cm}})
		}
	}
	repo := helmrepo.NewServer(t, charts...)

	edge := testenv.Start(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, edge.WriteKubeconfig(path))
	kubeconfig, err := os.ReadFile(path)
	must(t, err)
	// The namespace exists on the edge: nobody's inventory (the test API
	// server has no namespace controller to delete one Annex created).
	must(t, edge.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}, Data: map[string][]byte{"kubeconfig": kubeconfig}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
		&v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge", Labels: map[string]string{"env": "prod"}}, Spec: v1alpha1.ManagedClusterSpec{
			KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: ns, Name: "edge", Key: "kubeconfig"}}},
		&v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "base"}, Spec: v1alpha1.ExtensionProfileSpec{
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			IncludeHub:      true,
			Namespace:       ns,
			Extensions: []v1alpha1.ProfileExtension{
				{Name: "p-app", Version: "1.x", Mode: v1alpha1.ProfileModeDefault},
				{Name: "p-tool", Version: "1.x", Mode: v1alpha1.ProfileModeEnforced,
					Values: &apiextensionsv1.JSON{Raw: []byte(`{"note":"for {{ .cluster.name }}"}`)}},
			},
		}},
	} {
		must(t, env.Client.Create(ctx, obj))
	}

	// Every selected cluster gets both; the status sums them up.
	for _, name := range []string{"p-app", "p-tool", "p-app-edge", "p-tool-edge"} {
		awaitReady(t, ns, name, "1.0.0")
	}
	awaitProfile(t, func(p *v1alpha1.ExtensionProfile) error {
		if p.Status.MatchingClusters != 2 || p.Status.Installations != 4 || p.Status.ReadyInstallations != 4 ||
			!meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	})
	if err := edge.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p-tool-edge"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("p-tool's ConfigMap on the edge cluster: %v", err)
	}
	// The cluster variables are expanded for each cluster.
	for name, want := range map[string]string{"p-tool-edge": `{"note":"for edge"}`, "p-tool": `{"note":"for hub"}`} {
		inst := awaitReady(t, ns, name, "1.0.0")
		if got := string(inst.Spec.Values.Raw); got != want {
			t.Fatalf("%s: values %s, want %s", name, got, want)
		}
	}

	// Default: the owners' edit stays, their deletion too.
	setVersion(t, ns, "p-app", "2.x")
	awaitReady(t, ns, "p-app", "2.0.0")
	must(t, env.Client.Delete(ctx, &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-app-edge"}}))
	awaitGone(t, ns, "p-app-edge")
	// Enforced: the edit is reverted, the deletion undone.
	setVersion(t, ns, "p-tool", "2.x")
	must(t, env.Client.Delete(ctx, &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p-tool-edge"}}))
	awaitReady(t, ns, "p-tool-edge", "1.0.0")
	got := awaitReady(t, ns, "p-tool", "1.0.0")
	// The profile's revision resolved 1.x to 1.0.0 for the fleet: an
	// Enforced installation is held at it, and moves when a revision does.
	// (A profile made before its catalog synced has a first revision that
	// resolved nothing, and a second once the catalog offers versions.)
	if ro := getProfile(t, "base").Status.Rollout; got.Spec.Version != "1.0.0" || ro == nil ||
		got.Labels[v1alpha1.LabelProfileRevision] != strconv.FormatInt(ro.Revision, 10) {
		t.Fatalf("the Enforced installation's version is %q (revision %q), want the revision's target 1.0.0 (the profile's revision, %+v)",
			got.Spec.Version, got.Labels[v1alpha1.LabelProfileRevision], ro)
	}
	time.Sleep(2 * time.Second) // a Default deleted must stay deleted, not come back late
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p-app-edge"}, &v1alpha1.ExtensionInstallation{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Default installation its owners deleted came back (err=%v)", err)
	}
	if inst := awaitReady(t, ns, "p-app", "2.0.0"); inst.Spec.Version != "2.x" {
		t.Fatalf("the owners' edit of a Default installation was reverted to %q", inst.Spec.Version)
	}

	// The cluster stops matching: its installations are uninstalled.
	mc := &v1alpha1.ManagedCluster{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Name: "edge"}, mc))
	relabel := client.MergeFrom(mc.DeepCopy())
	mc.Labels["env"] = "dev"
	must(t, env.Client.Patch(ctx, mc, relabel)) // the profile writes the cluster's notes meanwhile
	awaitGone(t, ns, "p-tool-edge")
	if err := edge.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "p-tool-edge"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("p-tool's ConfigMap must be uninstalled from the cluster that stopped matching (err=%v)", err)
	}

	// Deleting the profile removes what it holds on the hub too.
	must(t, env.Client.Delete(ctx, &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "base"}}))
	awaitGone(t, ns, "p-tool")
	awaitGone(t, ns, "p-app")
	eventually(t, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "base"}, &v1alpha1.ExtensionProfile{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("profile still there (err=%v)", err)
		}
		return nil
	})
}

// Two profiles offer one extension to the same cluster: the higher
// priority gives it, the other says so.
func TestProfileConflict(t *testing.T) {
	ctx := context.Background()
	const ns = "conflict"
	repo := helmrepo.NewServer(t, helmrepo.Chart{Name: "c-app", Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {a: b}\n"}})
	must(t, env.Client.Create(ctx, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}}))
	for _, p := range []struct {
		name     string
		priority int32
	}{{"low", 0}, {"high", 5}} {
		must(t, env.Client.Create(ctx, &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Spec: v1alpha1.ExtensionProfileSpec{
			IncludeHub: true, Namespace: ns, Priority: p.priority,
			Extensions: []v1alpha1.ProfileExtension{{Name: "c-app", Values: nil}},
		}}))
	}
	awaitReady(t, ns, "c-app", "1.0.0")
	// low may create it before high exists; high then takes it over.
	eventually(t, func() error {
		inst := &v1alpha1.ExtensionInstallation{}
		must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c-app"}, inst))
		if inst.Labels[v1alpha1.LabelProfile] != "high" {
			return fmt.Errorf("c-app is held by %q, want the higher priority profile", inst.Labels[v1alpha1.LabelProfile])
		}
		return nil
	})
	p := &v1alpha1.ExtensionProfile{}
	eventually(t, func() error {
		must(t, env.Client.Get(ctx, client.ObjectKey{Name: "low"}, p))
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionConflict)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "c-app on hub: profile high") {
			return fmt.Errorf("profile low: Conflict %+v", c)
		}
		return nil
	})
	for _, name := range []string{"low", "high"} {
		must(t, env.Client.Delete(ctx, &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	}
	awaitGone(t, ns, "c-app")
}

func setVersion(t *testing.T, ns, name, version string) {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{}
	must(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, inst))
	patch := client.MergeFrom(inst.DeepCopy())
	inst.Spec.Version = version
	must(t, env.Client.Patch(context.Background(), inst, patch))
}

func awaitReady(t *testing.T, ns, name, version string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	inst := &v1alpha1.ExtensionInstallation{}
	eventually(t, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, inst); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != inst.Generation || inst.Status.InstalledVersion != version {
			return fmt.Errorf("%s: want %s Ready, have %q %+v", name, version, inst.Status.InstalledVersion, ready)
		}
		return nil
	})
	return inst
}

func awaitGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.ExtensionInstallation{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s still there (err=%v)", name, err)
		}
		return nil
	})
}

func awaitProfile(t *testing.T, check func(*v1alpha1.ExtensionProfile) error) {
	t.Helper()
	eventually(t, func() error {
		p := &v1alpha1.ExtensionProfile{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "base"}, p); err != nil {
			return err
		}
		return check(p)
	})
}

func eventually(t *testing.T, f func() error) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, f)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestProfileLongNames: an extension and a ManagedCluster with
// 63-character names, and a cluster whose name is longer than a label
// value, sharing one member API server: the profile's installations
// install (on the hub too) and uninstall, their names and labels
// shortened where needed. A profile's own name is refused beyond 63
// characters, with the reason.
func TestProfileLongNames(t *testing.T) {
	ctx := context.Background()
	const ns = "long-names"
	ext := "ext-" + strings.Repeat("e", 59)
	clusters := []string{"eu.edge-" + strings.Repeat("c", 55), "region-" + strings.Repeat("d", 60) + "." + strings.Repeat("f", 60)}
	if len(ext) != 63 || len(clusters[0]) != 63 {
		t.Fatalf("names of %d and %d characters, want 63", len(ext), len(clusters[0]))
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata: {v: {{ .Chart.Version | quote }}}\n"
	repo := helmrepo.NewServer(t, helmrepo.Chart{Name: ext, Version: "1.0.0", Files: map[string]string{"templates/cm.yaml": cm}})

	member := testenv.Start(t)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, member.WriteKubeconfig(path))
	kubeconfig, err := os.ReadFile(path)
	must(t, err)
	must(t, member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "member"}, Data: map[string][]byte{"kubeconfig": kubeconfig}},
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "long-names"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
	}
	for _, name := range clusters {
		objs = append(objs, &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"names": "long"}}, Spec: v1alpha1.ManagedClusterSpec{
			KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: ns, Name: "member", Key: "kubeconfig"}}})
	}
	profile := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: "long-names"}, Spec: v1alpha1.ExtensionProfileSpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"names": "long"}},
		IncludeHub:      true,
		Namespace:       ns,
		Extensions:      []v1alpha1.ProfileExtension{{Name: ext, Version: "1.x", Mode: v1alpha1.ProfileModeEnforced}},
	}}
	for _, obj := range append(objs, profile) {
		must(t, env.Client.Create(ctx, obj))
	}

	// Every installation is Ready, its objects and records labelled with
	// valid values that the lookups find.
	installations := map[string]string{ext: ""} // name: cluster
	for _, c := range clusters {
		installations[fleet.InstallationName(ext, c)] = c
	}
	for name, c := range installations {
		inst := awaitReady(t, ns, name, "1.0.0")
		if got, want := inst.Labels[v1alpha1.LabelProfileCluster], names.LabelValue(cmp.Or(c, "hub")); got != want {
			t.Errorf("%s: label %s=%q, want %q", name, v1alpha1.LabelProfileCluster, got, want)
		}
		if len(name) > 63 {
			t.Errorf("installation name %q has %d characters", name, len(name))
		}
		target := env.Client
		if c != "" {
			target = member.Client
		}
		obj := &corev1.ConfigMap{}
		must(t, target.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj))
		if got := obj.Labels[v1alpha1.LabelInstallationName]; got != names.LabelValue(name) {
			t.Errorf("ConfigMap %s: label %s=%q", name, v1alpha1.LabelInstallationName, got)
		}
		// One record, found by the label: a leftover of an attempt the
		// apply superseded (a reconcile that read a stale installation
		// numbers its intent anew) is deleted just after the status that
		// says Ready, so the count settles rather than holds at once.
		eventually(t, func() error {
			var records corev1.SecretList
			if err := env.Client.List(ctx, &records, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelInstallationName: names.LabelValue(name)}); err != nil {
				return err
			}
			if len(records.Items) != 1 || records.Items[0].Type != v1alpha1.RevisionSecretType {
				return fmt.Errorf("%s: %d revision records, want 1", name, len(records.Items))
			}
			return nil
		})
	}

	// A profile's name longer than 63 characters is refused, saying why.
	tooLong := profile.DeepCopy()
	tooLong.ObjectMeta = metav1.ObjectMeta{Name: "p" + strings.Repeat("x", 63)}
	if err := env.Client.Create(ctx, tooLong); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at most 63 characters") {
		t.Fatalf("a 64-character profile name: err=%v, want Invalid naming the limit", err)
	}

	// Deleting the profile uninstalls everything, on the member too.
	must(t, env.Client.Delete(ctx, profile))
	for name, c := range installations {
		awaitGone(t, ns, name)
		target := env.Client
		if c != "" {
			target = member.Client
		}
		if err := target.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s still there after the uninstall (err=%v)", name, err)
		}
	}
}
