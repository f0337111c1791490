package installation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/verify"
)

// testKey is a signing key pair generated for a test, and its fingerprint
// as messages show it.
type testKey struct {
	private, public []byte
	short           string
}

func newTestKey(t *testing.T) testKey {
	t.Helper()
	priv, pub, err := verify.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	fp, err := verify.SigningKeyFingerprint(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{private: priv, public: pub, short: fp[:len("sha256:")+12]}
}

// configPackage is a package whose deploy plan applies one ConfigMap,
// <instance>-<name>, whose data names variant (another variant is
// another digest).
func configPackage(name, version, variant string) map[string][]byte {
	return map[string][]byte{
		"operator.yaml": []byte(`apiVersion: kudo.dev/v1beta1
name: ` + name + `
operatorVersion: ` + version + `
appVersion: "1.0"
kubernetesVersion: 1.30.0
tasks:
  - name: app
    kind: Apply
    spec: {resources: [cm.yaml]}
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: app
            tasks: [app]
`),
		"params.yaml":       []byte("apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: MESSAGE\n    default: hi\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-" + name + "\ndata:\n  message: {{ .Params.MESSAGE }}\n  variant: " + variant + "\n"),
	}
}

// pushPackage pushes a package to destination, signed with each of keys
// (none: unsigned), and returns its reference.
func pushPackage(t *testing.T, destination string, files map[string][]byte, keys ...testKey) string {
	t.Helper()
	archive, err := catalog.PackageArchive(files)
	if err != nil {
		t.Fatal(err)
	}
	var ref string
	for i := 0; i == 0 || i < len(keys); i++ {
		o := oci.PushOptions{PlainHTTP: true}
		if len(keys) > 0 {
			o.Sign = &oci.SignOptions{Key: keys[i].private}
		}
		if ref, err = oci.PushPackage(context.Background(), archive, destination, o); err != nil {
			t.Fatal(err)
		}
	}
	return ref
}

// pushChart pushes a Helm chart as `helm push` stores it (config
// Chart.yaml as JSON, one chart layer) at <destination>/<name>:<version>,
// signed with each of keys, and returns its reference.
func pushChart(t *testing.T, destination string, chart helmrepo.Chart, keys ...testKey) string {
	t.Helper()
	archive, err := helmrepo.Archive(chart)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(strings.TrimPrefix(destination, "oci://") + "/" + chart.Name)
	if err != nil {
		t.Fatal(err)
	}
	config := []byte(`{"apiVersion":"v2","name":"` + chart.Name + `","version":"` + chart.Version + `"}`)
	var descs []v1.Descriptor
	for _, b := range []struct {
		data []byte
		mt   types.MediaType
	}{{config, oci.MediaTypeHelmConfig}, {archive, oci.MediaTypeHelmChart}} {
		layer := static.NewLayer(b.data, b.mt)
		if err := remote.WriteLayer(repo, layer); err != nil {
			t.Fatal(err)
		}
		digest, _ := layer.Digest()
		descs = append(descs, v1.Descriptor{MediaType: b.mt, Digest: digest, Size: int64(len(b.data))})
	}
	img := &remote.Descriptor{Manifest: mustJSON(t, v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: descs[0], Layers: descs[1:]})}
	img.MediaType = types.OCIManifestSchema1
	if err := remote.Put(repo.Tag(chart.Version), img); err != nil {
		t.Fatal(err)
	}
	digest := catalog.Digest(img.Manifest)
	for _, k := range keys {
		if err := oci.PushSignature(repo, digest, oci.SignOptions{Key: k.private}); err != nil {
			t.Fatal(err)
		}
	}
	return "oci://" + repo.Name() + "@" + digest
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signedCatalog creates a Catalog of the OCI repository with a Cosign
// policy in mode over keys, and waits until it is Ready.
func signedCatalog(t *testing.T, catalogName, repository string, mode v1alpha1.VerificationMode, keys ...v1alpha1.CosignKey) {
	t.Helper()
	signedCatalogPolicy(t, catalogName, repository, &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: mode, Cosign: &v1alpha1.CosignVerification{Keys: keys}})
}

// signedCatalogPolicy creates a Catalog of the OCI repository with
// policy, and waits until it is Ready.
func signedCatalogPolicy(t *testing.T, catalogName, repository string, policy *v1alpha1.VerificationPolicy) {
	t.Helper()
	ctx := context.Background()
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: catalogName},
		Spec: v1alpha1.CatalogSpec{
			Source: v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: repository}},
			Verify: policy,
		},
	}
	if err := env.Client.Create(ctx, cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cat) })
	eventually(t, 30*time.Second, func() error {
		got := &v1alpha1.Catalog{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cat), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("catalog not ready: %+v", got.Status.Conditions)
		}
		return nil
	})
}

// TestCosignEnforce: under an Enforce policy trusting two keys (one
// inline, one from a Secret: a rotation), packages and a Helm chart signed
// by either install and show their signer; an unsigned package, one signed by
// another key and one replaced after signing are refused with a terminal
// condition naming why, and nothing of them is applied.
func TestCosignEnforce(t *testing.T) {
	ctx := context.Background()
	ns := packageNamespace(t)
	host := catalogtest.NewRegistry(t)
	repository := "oci://" + host + "/" + ns
	alice, bob, mallory := newTestKey(t), newTestKey(t), newTestKey(t)

	pushPackage(t, repository, configPackage("sig-alice", "1.0.0", "a"), alice)
	// A Helm chart in the registry, signed as cosign signs.
	pushChart(t, repository, helmrepo.Chart{Name: "sig-chart", Version: "1.0.0",
		Files: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sig-chart\ndata: {a: b}\n"}}, bob)
	pushChart(t, repository, helmrepo.Chart{Name: "sig-chart-none", Version: "1.0.0",
		Files: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sig-chart-none\ndata: {a: b}\n"}})
	pushPackage(t, repository, configPackage("sig-bob", "1.0.0", "a"), bob)
	pushPackage(t, repository, configPackage("sig-none", "1.0.0", "a"))
	pushPackage(t, repository, configPackage("sig-mallory", "1.0.0", "a"), mallory)
	// Tampered: other content pushed under the signed tag, with the
	// signature of the signed content copied next to it.
	signed := pushPackage(t, repository, configPackage("sig-tampered", "1.0.0", "a"), alice)
	tampered := pushPackage(t, repository, configPackage("sig-tampered", "1.0.0", "evil"))
	copySignatureTo(t, signed, tampered)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "signing-keys"}, Data: map[string][]byte{"bob.pub": bob.public}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	signedCatalog(t, ns, repository, v1alpha1.VerificationEnforce,
		v1alpha1.CosignKey{Name: "alice", PublicKey: string(alice.public)},
		v1alpha1.CosignKey{Name: "bob", SecretRef: &v1alpha1.PublicKeySecretReference{Namespace: ns, Name: "signing-keys", Key: "bob.pub"}})

	for _, tc := range []struct{ extension, signer string }{{"sig-alice", "alice"}, {"sig-bob", "bob"}, {"sig-chart", "bob"}} {
		inst := install(t, ns, tc.extension, tc.extension, "")
		got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		a := got.Status.Artifact
		if a == nil || a.Verification == nil || !a.Verification.Verified || a.Verification.Provider != v1alpha1.VerificationCosign ||
			!strings.Contains(a.Verification.Identity, `key "`+tc.signer+`"`) || !strings.HasPrefix(a.Digest, "sha256:") || a.Version != "1.0.0" {
			t.Fatalf("%s: status.artifact %+v, want verified by %s with a digest", tc.extension, describeArtifact(a), tc.signer)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionVerified); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, tc.signer) {
			t.Fatalf("%s: Verified condition %+v", tc.extension, c)
		}
		if _, err := get(t, configMapGVK, ns, tc.extension+"-"+tc.extension); err != nil {
			t.Fatalf("%s: its ConfigMap: %v", tc.extension, err)
		}
	}

	for _, tc := range []struct {
		extension, reason string
		want              []string
	}{
		{"sig-none", v1alpha1.ReasonSignatureMissing, []string{"sig-none 1.0.0", "has no cosign signature", `key "alice"`, `key "bob"`, "--sign-key"}},
		{"sig-chart-none", v1alpha1.ReasonSignatureMissing, []string{"sig-chart-none 1.0.0", "has no cosign signature"}},
		{"sig-mallory", v1alpha1.ReasonIdentityMismatch, []string{"by none of the trusted keys", alice.short, bob.short, "names itself " + mallory.short}},
		{"sig-tampered", v1alpha1.ReasonSignatureInvalid, []string{"covers digest " + signed[strings.LastIndex(signed, "@")+1:], tampered[strings.LastIndex(tampered, "@")+1:]}},
	} {
		inst := install(t, ns, tc.extension, tc.extension, "")
		got := waitCondition(t, inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, tc.reason)
		got = waitCondition(t, got, v1alpha1.ConditionStalled, metav1.ConditionTrue, tc.reason)
		msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionInstalled).Message
		t.Logf("%s: %s", tc.reason, msg)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the message lacks %q:\n%s", tc.extension, w, msg)
			}
		}
		if a := got.Status.Artifact; a == nil || a.Verification == nil || a.Verification.Verified || a.Verification.Reason != tc.reason {
			t.Errorf("%s: status.artifact %s", tc.extension, describeArtifact(a))
		}
		if _, err := get(t, configMapGVK, ns, tc.extension+"-"+tc.extension); !apierrors.IsNotFound(err) {
			t.Errorf("%s: refused, yet its ConfigMap exists (%v)", tc.extension, err)
		}
		if got.Status.InventoryCount != 0 || len(got.Status.History) != 0 {
			t.Errorf("%s: refused, yet something was applied: %d objects, %d revisions", tc.extension, got.Status.InventoryCount, len(got.Status.History))
		}
	}
}

// TestCosignAudit: under an Audit policy an unsigned package installs,
// and its installation reports it: Verified False, a Warning Event.
func TestCosignAudit(t *testing.T) {
	ns := packageNamespace(t)
	host := catalogtest.NewRegistry(t)
	repository := "oci://" + host + "/" + ns
	alice := newTestKey(t)
	pushPackage(t, repository, configPackage("audit-none", "1.0.0", "a"))
	signedCatalog(t, ns, repository, v1alpha1.VerificationAudit, v1alpha1.CosignKey{Name: "alice", PublicKey: string(alice.public)})

	inst := install(t, ns, "audit-none", "audit-none", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionVerified)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonSignatureMissing || !strings.Contains(c.Message, "has no cosign signature") {
		t.Fatalf("Verified condition %+v", c)
	}
	if a := got.Status.Artifact; a == nil || a.Verification == nil || a.Verification.Mode != v1alpha1.VerificationAudit || a.Verification.Verified {
		t.Fatalf("status.artifact %s", describeArtifact(a))
	}
	if _, err := get(t, configMapGVK, ns, "audit-none-audit-none"); err != nil {
		t.Fatalf("the audited package is not installed: %v", err)
	}
	assertEvent(t, ns, "audit-none", v1alpha1.ReasonSignatureMissing, "spec.verify is Audit")
}

// TestBuiltinCatalogTrustedUnderEnforce: an Enforce policy on the
// built-in catalog, whose artifacts carry no signature, refuses none of
// them: they are part of the binary.
func TestBuiltinCatalogTrustedUnderEnforce(t *testing.T) {
	ctx := context.Background()
	ns := packageNamespace(t)
	builtinCatalog(t)
	key := newTestKey(t)
	setVerify := func(v *v1alpha1.VerificationPolicy) {
		eventually(t, 10*time.Second, func() error {
			cat := &v1alpha1.Catalog{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: "builtin"}, cat); err != nil {
				return err
			}
			cat.Spec.Verify = v
			return env.Client.Update(ctx, cat)
		})
	}
	setVerify(&v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationEnforce,
		Cosign: &v1alpha1.CosignVerification{Keys: []v1alpha1.CosignKey{{Name: "release", PublicKey: string(key.public)}}}})
	t.Cleanup(func() { setVerify(nil) })

	inst := install(t, ns, "motd", "motd", "1.0.0")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if a := got.Status.Artifact; a == nil || a.Verification == nil || a.Verification.Provider != v1alpha1.VerificationBuiltin || !a.Verification.Verified {
		t.Fatalf("status.artifact %s, want the built-in provider, verified", describeArtifact(a))
	}
	if _, err := get(t, configMapGVK, ns, "motd"); err != nil {
		t.Fatalf("motd's ConfigMap: %v", err)
	}
}

func describeArtifact(a *v1alpha1.ArtifactStatus) string {
	if a == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v verification %+v", *a, a.Verification)
}

// copySignatureTo puts the signature manifest of from's digest at the
// signature tag of to's digest.
func copySignatureTo(t *testing.T, from, to string) {
	t.Helper()
	src, err := name.NewDigest(strings.TrimPrefix(from, "oci://"))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := name.NewDigest(strings.TrimPrefix(to, "oci://"))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(src.Context().Tag(verify.SignatureTag(src.DigestStr())))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(dst.Context().Tag(verify.SignatureTag(dst.DigestStr())), desc); err != nil {
		t.Fatal(err)
	}
}
