package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestBuiltinCatalogSynced(t *testing.T) {
	const digest = "sha256:aaaa"
	catalog := func(generation, observed int64, ready metav1.ConditionStatus, artifact string) *v1alpha1.Catalog {
		cat := &v1alpha1.Catalog{
			ObjectMeta: metav1.ObjectMeta{Name: "builtin", Generation: generation},
			Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}}},
			Status:     v1alpha1.CatalogStatus{ObservedGeneration: observed, ArtifactDigest: artifact},
		}
		if ready != "" {
			cat.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: ready, Message: "the message"}}
		}
		return cat
	}
	suspended := catalog(1, 0, "", "")
	suspended.Spec.Suspend = true
	helm := catalog(1, 1, metav1.ConditionTrue, "sha256:other")
	helm.Spec.Source = v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: "https://charts.example"}}
	for _, tc := range []struct {
		name string
		cat  *v1alpha1.Catalog
		done bool
		why  string
	}{
		// Just created: no status yet.
		{"new", catalog(1, 0, "", ""), false, "not synced yet"},
		// Ready, made from this annex's index: synced.
		{"synced", catalog(1, 1, metav1.ConditionTrue, digest), true, ""},
		// Ready for an older generation: the change is not synced yet.
		{"older generation", catalog(2, 1, metav1.ConditionTrue, digest), false, "not synced yet"},
		// Ready from a state an older annex left: its Extensions are about
		// to change.
		{"older annex", catalog(1, 1, metav1.ConditionTrue, "sha256:old"), false, "another annex build"},
		// Not Ready: what the catalog says.
		{"not ready", catalog(1, 1, metav1.ConditionFalse, digest), false, "Ready is False: the message"},
		// Suspended by the user: done, with a note.
		{"suspended", suspended, true, "is suspended"},
		// Someone gave it another source: Ready for its generation is enough.
		{"other source", helm, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done, why := builtinCatalogSynced(tc.cat, digest)
			if done != tc.done || !strings.Contains(why, tc.why) || (tc.why == "" && why != "") {
				t.Errorf("builtinCatalogSynced = %v, %q; want %v, %q", done, why, tc.done, tc.why)
			}
		})
	}
}

func TestNodeAllocatable(t *testing.T) {
	for _, tc := range []struct {
		cpu, memory, pods string
		want              corev1.ResourceList
		wantErr           string
	}{
		// The flags' defaults.
		{"32", "128Gi", "250", corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"), corev1.ResourcePods: resource.MustParse("250")}, ""},
		// Smaller nodes, in millicores.
		{"7500m", "16Gi", "110", corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("7500m"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}, ""},
		// Not a quantity: the flag is named with an example.
		{"lots", "128Gi", "250", nil, `--node-cpu "lots": want a positive Kubernetes quantity, such as 32`},
		// Zero memory would schedule nothing.
		{"32", "0", "250", nil, `--node-memory "0": want a positive Kubernetes quantity, such as 128Gi`},
	} {
		got, err := nodeAllocatable(tc.cpu, tc.memory, tc.pods)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("nodeAllocatable(%s, %s, %s) error = %v, want %q", tc.cpu, tc.memory, tc.pods, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("nodeAllocatable(%s, %s, %s): %v", tc.cpu, tc.memory, tc.pods, err)
			continue
		}
		for name, q := range tc.want {
			if g := got[name]; g.Cmp(q) != 0 {
				t.Errorf("nodeAllocatable(%s, %s, %s)[%s] = %s, want %s", tc.cpu, tc.memory, tc.pods, name, g.String(), q.String())
			}
		}
	}
}

// annex dev's registry writes its address where guides read it, keeps its
// port across starts, and with --registry-port -1 runs none and leaves no
// address behind.
func TestDevRegistry(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	host, stop, err := startDevRegistry(dir, 0, &out)
	if err != nil {
		t.Fatal(err)
	}
	address, err := os.ReadFile(filepath.Join(dir, registryAddressFile))
	if err != nil || string(address) != host+"\n" || !strings.HasPrefix(host, "127.0.0.1:") {
		t.Fatalf("registry on %q, %s says %q (%v)", host, registryAddressFile, address, err)
	}
	if !strings.Contains(out.String(), "OCI registry on "+host) || !strings.Contains(registrySteps(host), "oci://"+host+"/packages --plain-http") {
		t.Errorf("annex dev does not say where the registry is:\n%s\n%s", out.String(), registrySteps(host))
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	again, stop, err := startDevRegistry(dir, 0, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if again != host {
		t.Errorf("the second start is on %s, want the first's %s", again, host)
	}
	if host, _, err := startDevRegistry(dir, -1, &out); err != nil || host != "" {
		t.Fatalf("--registry-port -1: %q, %v", host, err)
	}
	if _, err := os.Stat(filepath.Join(dir, registryAddressFile)); !os.IsNotExist(err) {
		t.Errorf("without a registry %s stays (%v)", registryAddressFile, err)
	}
	if registrySteps("") != "" {
		t.Error("next steps name a registry that does not run")
	}
}
