package installation_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
)

// pushBundleImage pushes the memcached-operator bundle of an olm catalog
// written by memcachedCatalog (its inline objects, CSV renamed for
// pkgName 0.1.0) as a registry+v1 bundle image at
// <host>/<pkgName>-bundle:v0.1.0, signed with each of keys, and returns
// its digest reference (no scheme).
func pushBundleImage(t *testing.T, host, pkgName string, keys ...testKey) string {
	t.Helper()
	dir := t.TempDir()
	memcachedCatalog(t, dir, pkgName)
	raw, err := os.ReadFile(filepath.Join(dir, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"metadata/annotations.yaml": []byte("annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: " + pkgName + "\n")}
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var blob struct {
			Schema     string `json:"schema"`
			Properties []struct {
				Type  string `json:"type"`
				Value struct {
					Data []byte `json:"data"`
				} `json:"value"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(line, &blob); err != nil {
			t.Fatal(err)
		}
		for j, p := range blob.Properties {
			if p.Type == "olm.bundle.object" {
				files[fmt.Sprintf("manifests/%02d.json", j)] = p.Value.Data
			}
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for n, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(host + "/" + pkgName + "-bundle:v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := oci.PushSignature(tag.Context(), d.String(), oci.SignOptions{Key: k.private}); err != nil {
			t.Fatal(err)
		}
	}
	return tag.Context().Name() + "@" + d.String()
}

// TestBundleImageCosignEnforce: an olm catalog whose bundles are images
// in a registry, under an Enforce cosign policy: the operator whose
// bundle image is signed by the trusted key installs and shows the key;
// the one whose bundle image is unsigned is refused before anything is
// applied.
func TestBundleImageCosignEnforce(t *testing.T) {
	ns := packageNamespace(t)
	host := catalogtest.NewRegistry(t)
	release := newTestKey(t)
	signed := pushBundleImage(t, host, "signed-op", release)
	unsigned := pushBundleImage(t, host, "unsigned-op")

	var fbc bytes.Buffer
	for _, b := range []struct{ pkg, image string }{{"signed-op", signed}, {"unsigned-op", unsigned}} {
		for _, blob := range []map[string]any{
			{"schema": "olm.package", "name": b.pkg, "defaultChannel": "alpha"},
			{"schema": "olm.channel", "package": b.pkg, "name": "alpha", "entries": []map[string]any{{"name": b.pkg + ".v0.1.0"}}},
			{"schema": "olm.bundle", "package": b.pkg, "name": b.pkg + ".v0.1.0", "image": b.image,
				"properties": []map[string]any{{"type": "olm.package", "value": map[string]any{"packageName": b.pkg, "version": "0.1.0"}}}},
		} {
			raw, _ := json.Marshal(blob)
			fbc.Write(append(raw, '\n'))
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), fbc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Path: dir}},
			Verify: &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationEnforce,
				Cosign: &v1alpha1.CosignVerification{Keys: []v1alpha1.CosignKey{{Name: "release", PublicKey: string(release.public)}}}}},
	}
	if err := env.Client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), cat) })

	inst := install(t, ns, "signed-op", "signed-op", "", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Uninstall.DeleteCRDs = true })
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	a := got.Status.Artifact
	if a == nil || a.URL != "oci://"+signed || a.Verification == nil || !a.Verification.Verified || a.Verification.Provider != v1alpha1.VerificationCosign ||
		!strings.Contains(a.Verification.Identity, `key "release"`) {
		t.Fatalf("status.artifact %s, want the bundle image verified by key release", describeArtifact(a))
	}

	refused := install(t, ns, "unsigned-op", "unsigned-op", "")
	refused = waitCondition(t, refused, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonSignatureMissing)
	msg := meta.FindStatusCondition(refused.Status.Conditions, v1alpha1.ConditionInstalled).Message
	for _, w := range []string{"unsigned-op 0.1.0", unsigned, "has no cosign signature", `key "release"`} {
		if !strings.Contains(msg, w) {
			t.Errorf("the message lacks %q:\n%s", w, msg)
		}
	}
	if refused.Status.InventoryCount != 0 || len(refused.Status.History) != 0 {
		t.Errorf("refused, yet something was applied: %d objects, %d revisions", refused.Status.InventoryCount, len(refused.Status.History))
	}
	deleteAndWait(t, refused)
	deleteAndWait(t, got)
}
