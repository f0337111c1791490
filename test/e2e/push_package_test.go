package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/verify"
)

// make push-package pushes a package folder to an OCI repository and,
// given a key, signs it: what it pushed verifies under a Cosign policy
// trusting that key. Without PACKAGE and DEST it says how to call it.
func TestMakePushPackageSigns(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	makeIn := func(args ...string) (string, error) {
		cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := makeIn("push-package")
	if err == nil || !strings.Contains(out, "usage: make push-package PACKAGE=folder DEST=oci://host/path") {
		t.Fatalf("make push-package without arguments: %v\n%s", err, out)
	}

	dir := t.TempDir()
	key := filepath.Join(dir, "release")
	if out, err := exec.Command(filepath.Join(root, "bin", "annexctl"), "package", "keygen", key).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v\n%s", err, out)
	}
	host := catalogtest.NewRegistry(t)
	out, err = makeIn("push-package", "PACKAGE=config/samples/greeter", "DEST=oci://"+host+"/packages", "SIGN_KEY="+key+".key", "PLAIN_HTTP=1")
	if err != nil || !strings.Contains(out, "signed it with key") {
		t.Fatalf("make push-package: %v\n%s", err, out)
	}
	var ref string
	for _, line := range strings.Split(out, "\n") {
		if after, ok := strings.CutPrefix(line, "pushed "); ok {
			ref = strings.TrimSpace(after)
		}
	}
	if !strings.Contains(ref, "@sha256:") {
		t.Fatalf("make push-package named no pushed digest:\n%s", out)
	}

	public, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Verify: &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign,
		Mode: v1alpha1.VerificationEnforce, Cosign: &v1alpha1.CosignVerification{Keys: []v1alpha1.CosignKey{{Name: "release", PublicKey: string(public)}}}}}}
	cat.Name = "pushed"
	lookup := catalogtest.Lookup{Catalogs: map[string]*v1alpha1.Catalog{"pushed": cat}}
	v := &sources.Verifier{Fetcher: &catalog.Fetcher{Lookup: lookup}, Lookup: lookup, Cache: &verify.Cache{}}
	got, err := v.Verify(context.Background(), "greeter", v1alpha1.ArtifactSource{Catalog: "pushed", URL: ref}, "")
	if err != nil || got == nil || !got.Verified || !strings.Contains(got.Identity, `key "release"`) {
		t.Fatalf("what make push-package pushed does not verify under the key: %+v, %v", got, err)
	}
}
