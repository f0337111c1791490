package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// catalog add --verify-key: the Catalog it prints (and creates) trusts
// each key file inline under the file's name, in the mode asked; what
// cannot be a trusted key is refused as a usage error naming the file and
// the fix.
func TestCatalogAddVerifyKey(t *testing.T) {
	dir := t.TempDir()
	for _, prefix := range []string{"release-2026", "release-2027", "Bad_Name"} {
		if out, code := run(t, "annexctl", "package", "keygen", filepath.Join(dir, prefix)); code != 0 {
			t.Fatalf("keygen %s: exit %d\n%s", prefix, code, out)
		}
	}
	pub2026, pub2027 := filepath.Join(dir, "release-2026.pub"), filepath.Join(dir, "release-2027.pub")
	garbage := filepath.Join(dir, "garbage.pub")
	if err := os.WriteFile(garbage, []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(file string) string {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}

	for _, c := range []struct {
		name string
		args []string
		want v1alpha1.VerificationPolicy
	}{
		// One key: Enforce unless told otherwise.
		{"one key", []string{"--verify-key", pub2026},
			v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationEnforce,
				Cosign: &v1alpha1.CosignVerification{Keys: []v1alpha1.CosignKey{{Name: "release-2026", PublicKey: read(pub2026)}}}}},
		// Two keys (a rotation), Audit in any case.
		{"two keys, audit", []string{"--verify-key", pub2026, "--verify-key", pub2027, "--verify-mode", "audit"},
			v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationAudit,
				Cosign: &v1alpha1.CosignVerification{Keys: []v1alpha1.CosignKey{
					{Name: "release-2026", PublicKey: read(pub2026)}, {Name: "release-2027", PublicKey: read(pub2027)}}}}},
	} {
		args := append([]string{"catalog", "add", "packages", "oci://127.0.0.1:5000/packages", "--dry-run", "-o", "yaml"}, c.args...)
		out, code := run(t, "annexctl", args...)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s", c.name, code, out)
			continue
		}
		printed := &v1alpha1.Catalog{}
		if err := yaml.UnmarshalStrict([]byte(out), printed); err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		if got, want := mustYAML(t, printed.Spec.Verify), mustYAML(t, &c.want); got != want {
			t.Errorf("%s: spec.verify\n%s\nwant\n%s", c.name, got, want)
		}
	}

	for _, c := range []struct {
		name string
		args []string
		want []string // in the message
	}{
		{"a private key", []string{"oci://r.example.com/p", "--verify-key", filepath.Join(dir, "release-2026.key")},
			[]string{"is a private key", "release-2026.pub"}},
		{"not PEM", []string{"oci://r.example.com/p", "--verify-key", garbage},
			[]string{"--verify-key " + garbage, "not a PEM public key", "-----BEGIN PUBLIC KEY-----"}},
		{"a file name the API refuses as a key name", []string{"oci://r.example.com/p", "--verify-key", filepath.Join(dir, "Bad_Name.pub")},
			[]string{`"Bad_Name" is not a key name`, "release-2026.pub"}},
		{"the same name twice", []string{"oci://r.example.com/p", "--verify-key", pub2026, "--verify-key", filepath.Join(t.TempDir(), "release-2026.pub")},
			[]string{`same key name "release-2026"`}},
		{"a missing file", []string{"oci://r.example.com/p", "--verify-key", filepath.Join(dir, "none.pub")},
			[]string{"none.pub", "no such file"}},
		{"a Helm repository over HTTP", []string{"https://charts.example.com", "--verify-key", pub2026},
			[]string{"reads https://charts.example.com", "OCI registries", "helmProvenance"}},
		{"a mode without keys", []string{"oci://r.example.com/p", "--verify-mode", "Audit"},
			[]string{"--verify-mode Audit needs --verify-key FILE"}},
		{"an unknown mode", []string{"oci://r.example.com/p", "--verify-key", pub2026, "--verify-mode", "Strict"},
			[]string{`--verify-mode "Strict": use Enforce`, "or Audit"}},
	} {
		out, code := run(t, "annexctl", append([]string{"catalog", "add", "packages", "--dry-run"}, c.args...)...)
		if code != cli.ExitUsage {
			t.Errorf("%s: exit %d, want %d (usage)\n%s", c.name, code, cli.ExitUsage, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the message lacks %q:\n%s", c.name, w, out)
			}
		}
	}

	// --verify-mode completes to its two values, --verify-key to files.
	if out, code := run(t, "annexctl", "__complete", "catalog", "add", "p", "oci://r/p", "--verify-mode", ""); code != 0 || !strings.HasPrefix(out, "Enforce\nAudit\n:4\n") {
		t.Errorf("__complete --verify-mode: exit %d\n%s", code, out)
	}
	if out, code := run(t, "annexctl", "__complete", "catalog", "add", "p", "oci://r/p", "--verify-key", ""); code != 0 || !strings.HasPrefix(out, "pub\npem\n:8\n") {
		t.Errorf("__complete --verify-key: exit %d, want the extensions pub and pem with file completion (:8)\n%s", code, out)
	}

	// Against an API server: the CRD's validation accepts what was
	// printed, and add says whom the catalog trusts.
	env := testenv.Start(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, "annexctl", "--kubeconfig", kubeconfig, "catalog", "add", "packages", "oci://127.0.0.1:5000/packages", "--verify-key", pub2026)
	if code != 0 || !strings.Contains(out, "catalog packages added") ||
		!strings.Contains(out, `its artifacts must carry a Cosign signature by key "release-2026" (sha256:`) || !strings.Contains(out, "it refuses what does not (Enforce)") {
		t.Fatalf("catalog add --verify-key: exit %d\n%s", code, out)
	}
	created := &v1alpha1.Catalog{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "packages"}, created); err != nil {
		t.Fatal(err)
	}
	if v := created.Spec.Verify; v == nil || v.Mode != v1alpha1.VerificationEnforce || v.Cosign == nil || len(v.Cosign.Keys) != 1 || v.Cosign.Keys[0].PublicKey != read(pub2026) {
		t.Errorf("created spec.verify %s", mustYAML(t, v))
	}
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
