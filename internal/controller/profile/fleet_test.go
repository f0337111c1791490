package profile_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// TestOneClusterChangeTouchesOnlyIt: a profile of two extensions over 50
// ManagedClusters on two real member API servers converges; then one
// cluster leaves the profile's selector. Only that cluster's two
// installations are written (they are uninstalled and removed); no other
// installation's resourceVersion moves, and the hub's API server counts
// a number of writes that does not depend on the fleet's size — far
// fewer than one per cluster.
func TestOneClusterChangeTouchesOnlyIt(t *testing.T) {
	ctx := context.Background()
	const ns, clusters = "onechange", 50
	exts := []string{"one-a", "one-b"}
	repo := helmrepo.NewServer(t, configMapChart(exts[0], "1.0.0"), configMapChart(exts[0], "1.1.0"), configMapChart(exts[1], "1.0.0"))
	must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for m := range 2 {
		member := testenv.Start(t)
		path := filepath.Join(t.TempDir(), "kubeconfig")
		must(t, member.WriteKubeconfig(path))
		kubeconfig, err := os.ReadFile(path)
		must(t, err)
		must(t, member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		must(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("member-%d", m)},
			Data: map[string][]byte{"kubeconfig": kubeconfig}}))
	}
	must(t, env.Client.Create(ctx, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}}))
	awaitCatalog(t, exts[0], 2)
	awaitCatalog(t, exts[1], 1)
	for i := range clusters {
		must(t, env.Client.Create(ctx, &v1alpha1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%02d", ns, i), Labels: map[string]string{"fleet": ns}},
			Spec: v1alpha1.ManagedClusterSpec{KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{
				Namespace: ns, Name: fmt.Sprintf("member-%d", i%2), Key: "kubeconfig"}}}))
	}
	profile := &v1alpha1.ExtensionProfile{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.ExtensionProfileSpec{
		Namespace:       ns,
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"fleet": ns}},
	}}
	for _, e := range exts {
		profile.Spec.Extensions = append(profile.Spec.Extensions, v1alpha1.ProfileExtension{Name: e, Version: "1.0.0", Mode: v1alpha1.ProfileModeEnforced})
	}
	must(t, env.Client.Create(ctx, profile))
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), profile)
		for i := range clusters {
			_ = env.Client.Delete(context.Background(), &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%02d", ns, i)}})
		}
	})

	// Converged: every installation Ready, the profile's status says so,
	// and nothing is written any more.
	installations := func() map[string]v1alpha1.ExtensionInstallation {
		var list v1alpha1.ExtensionInstallationList
		must(t, env.Client.List(ctx, &list, client.InNamespace(ns)))
		out := map[string]v1alpha1.ExtensionInstallation{}
		for _, in := range list.Items {
			out[in.Name] = in
		}
		return out
	}
	testenv.Eventually(t, 3*time.Minute, func() error {
		ready := 0
		for _, in := range installations() {
			if meta.IsStatusConditionTrue(in.Status.Conditions, v1alpha1.ConditionReady) {
				ready++
			}
		}
		if want := clusters * len(exts); ready != want {
			return fmt.Errorf("%d of %d installations Ready", ready, want)
		}
		return nil
	})
	writes := quiet(t)

	// One cluster leaves the selector.
	leaving := ns + "-07"
	before := installations()
	mc := &v1alpha1.ManagedCluster{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Name: leaving}, mc))
	patch := client.MergeFrom(mc.DeepCopy())
	mc.Labels["fleet"] = "elsewhere"
	must(t, env.Client.Patch(ctx, mc, patch))
	testenv.Eventually(t, time.Minute, func() error {
		now := installations()
		for _, e := range exts {
			if in, ok := now[e+"-"+leaving]; ok {
				return fmt.Errorf("%s is still there (deleting: %v)", in.Name, in.DeletionTimestamp != nil)
			}
		}
		return nil
	})
	// Its record of the profile's revision goes with its installations.
	testenv.Eventually(t, time.Minute, func() error {
		must(t, env.Client.Get(ctx, client.ObjectKey{Name: leaving}, mc))
		if rec, ok := mc.Annotations[v1alpha1.AnnotationProfileRevisionsPrefix+ns]; ok {
			return fmt.Errorf("ManagedCluster %s, which left the profile, still records %s", leaving, rec)
		}
		return nil
	})
	used := quiet(t) - writes

	after := installations()
	for name, in := range before {
		if strings.HasSuffix(name, "-"+leaving) {
			continue
		}
		if got, ok := after[name]; !ok || got.ResourceVersion != in.ResourceVersion {
			t.Errorf("installation %s of another cluster was written (resourceVersion %s → %s)", name, in.ResourceVersion, got.ResourceVersion)
		}
	}
	// Two installations uninstalled and removed (each: deletion, status,
	// finalizer, record), the cluster's and the profile's status, Events.
	t.Logf("one cluster leaving a profile over %d clusters cost the hub %d writes", clusters, used)
	if used > 30 {
		t.Errorf("one cluster leaving cost the hub %d writes, want a constant far below the fleet's size (≤ 30 for %d clusters)", used, clusters)
	}

	// A revision bumps one extension: on every cluster its installation
	// is updated and the cluster's record says the new revision; the
	// other extension's installations are not written at all.
	before = installations()
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(profile), profile))
	bump := client.MergeFrom(profile.DeepCopy())
	profile.Spec.Extensions[0].Version = "1.1.0"
	must(t, env.Client.Patch(ctx, profile, bump))
	var revision int64
	testenv.Eventually(t, 3*time.Minute, func() error {
		p := &v1alpha1.ExtensionProfile{}
		must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(profile), p))
		ro := p.Status.Rollout
		if ro == nil || p.Status.ObservedGeneration != p.Generation || ro.Phase != v1alpha1.RolloutComplete || ro.Revision < 2 {
			return fmt.Errorf("rollout %+v", ro)
		}
		revision = ro.Revision
		for name, in := range installations() {
			if strings.HasPrefix(name, exts[0]) && in.Status.InstalledVersion != "1.1.0" {
				return fmt.Errorf("%s runs %q, want 1.1.0", name, in.Status.InstalledVersion)
			}
		}
		return nil
	})
	after = installations()
	for name, in := range before {
		if strings.HasPrefix(name, exts[1]) && after[name].ResourceVersion != in.ResourceVersion {
			t.Errorf("installation %s, which the revision leaves as it is, was written (resourceVersion %s → %s)",
				name, in.ResourceVersion, after[name].ResourceVersion)
		}
	}
	for i := range clusters {
		name := fmt.Sprintf("%s-%02d", ns, i)
		if name == leaving {
			continue
		}
		must(t, env.Client.Get(ctx, client.ObjectKey{Name: name}, mc))
		var rec struct{ Revision, Previous, Move int64 }
		raw := mc.Annotations[v1alpha1.AnnotationProfileRevisionsPrefix+ns]
		if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec.Revision != revision || rec.Previous != revision-1 || rec.Move != 2 {
			t.Errorf("ManagedCluster %s records %q (%v), want revision %d, previous %d, move 2", name, raw, err, revision, revision-1)
		}
	}

	// The profile deleted: its installations go, then its records.
	must(t, env.Client.Delete(ctx, profile))
	testenv.Eventually(t, 3*time.Minute, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(profile), &v1alpha1.ExtensionProfile{}); err == nil {
			return fmt.Errorf("profile %s is still there", profile.Name)
		}
		return nil
	})
	var mcs v1alpha1.ManagedClusterList
	must(t, env.Client.List(ctx, &mcs))
	for _, mc := range mcs.Items {
		if rec, ok := mc.Annotations[v1alpha1.AnnotationProfileRevisionsPrefix+ns]; ok {
			t.Errorf("ManagedCluster %s still records %s of the deleted profile", mc.Name, rec)
		}
	}
}

// quiet waits until the hub's API server has counted no write for three
// seconds and returns how many it has counted in all.
func quiet(t *testing.T) int {
	t.Helper()
	last, since := -1, time.Now()
	testenv.Eventually(t, 2*time.Minute, func() error {
		n := hubWrites(t)
		if n != last {
			last, since = n, time.Now()
		}
		if time.Since(since) < 3*time.Second {
			return fmt.Errorf("the hub is still being written (%d writes so far)", n)
		}
		return nil
	})
	return last
}

// hubWrites sums the hub API server's apiserver_request_total over the
// verbs that write (dry runs excluded).
func hubWrites(t *testing.T) int {
	t.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	must(t, err)
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	must(t, err)
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || strings.Contains(line, `dry_run="All"`) {
			continue
		}
		write := false
		for _, verb := range []string{"POST", "PUT", "PATCH", "DELETE", "APPLY"} {
			write = write || strings.Contains(line, `verb="`+verb+`"`)
		}
		if !write {
			continue
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		must(t, err)
		total += int(n)
	}
	return total
}
