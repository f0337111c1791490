package installation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/verify"
)

// provChart is a chart whose one ConfigMap, <release>-<name>, says
// variant.
func provChart(name, variant string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + name + "\ndata: {variant: " + variant + "}\n"}}
}

// signProv makes c's provenance file with the armored private key.
func signProv(t *testing.T, private []byte, c helmrepo.Chart) []byte {
	t.Helper()
	archive, err := helmrepo.Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := verify.SignProvenance(private, archive, c.Name+"-"+c.Version+".tgz", []byte("apiVersion: v2\nname: "+c.Name+"\nversion: "+c.Version+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

// TestHelmProvenanceEnforce: a catalog of an HTTP Helm repository with a
// HelmProvenance policy (Enforce). A chart whose .prov a trusted key
// signed installs and shows its signer; an unsigned chart, one signed by
// another key and one re-published after signing are refused with a
// terminal condition, and nothing of them is applied.
func TestHelmProvenanceEnforce(t *testing.T) {
	ctx := context.Background()
	alicePriv, alicePub, err := verify.GenerateOpenPGPKey("Alice Release", "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	malloryPriv, _, err := verify.GenerateOpenPGPKey("Mallory", "mallory@example.com")
	if err != nil {
		t.Fatal(err)
	}
	signed, unsigned, foreign, tampered := provChart("prov-signed", "a"), provChart("prov-unsigned", "a"), provChart("prov-foreign", "a"), provChart("prov-tampered", "a")
	ns, repo := setup(t, signed, unsigned, foreign)
	repo.SetProvenance(signed, signProv(t, alicePriv, signed))
	repo.SetProvenance(foreign, signProv(t, malloryPriv, foreign))
	// Re-published after signing, and reindexed: the .prov is the original's.
	repo.SetProvenance(tampered, signProv(t, alicePriv, tampered))
	repo.Add(t, provChart("prov-tampered", "evil"))

	eventually(t, 30*time.Second, func() error {
		cat := &v1alpha1.Catalog{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, cat); err != nil {
			return err
		}
		cat.Spec.Verify = &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationHelmProvenance, Mode: v1alpha1.VerificationEnforce,
			HelmProvenance: &v1alpha1.HelmProvenanceVerification{Keyrings: []v1alpha1.OpenPGPKeyring{{Name: "release", Keyring: string(alicePub)}}}}
		// A change of the spec resyncs: the catalog indexes the tampered chart.
		return env.Client.Update(ctx, cat)
	})
	eventually(t, 30*time.Second, func() error {
		ext := &v1alpha1.Extension{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "prov-tampered"}, ext); err != nil {
			return err
		}
		return nil
	})

	inst := install(t, ns, "prov-signed", "prov-signed", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	a := got.Status.Artifact
	if a == nil || a.Verification == nil || !a.Verification.Verified || a.Verification.Provider != v1alpha1.VerificationHelmProvenance ||
		!strings.Contains(a.Verification.Identity, `keyring "release", OpenPGP key`) || !strings.Contains(a.Verification.Identity, "Alice Release <alice@example.com>") {
		t.Fatalf("status.artifact %s, want verified by Alice's key", describeArtifact(a))
	}
	if _, err := get(t, configMapGVK, ns, "prov-signed-prov-signed"); err != nil {
		t.Fatalf("the signed chart's ConfigMap: %v", err)
	}

	for _, tc := range []struct {
		extension, reason string
		want              []string
	}{
		{"prov-unsigned", v1alpha1.ReasonSignatureMissing, []string{"prov-unsigned 1.0.0", "no Helm provenance file", `keyring "release"`, "helm package --sign"}},
		{"prov-foreign", v1alpha1.ReasonIdentityMismatch, []string{"by none of the trusted OpenPGP keys", "signed by OpenPGP key"}},
		{"prov-tampered", v1alpha1.ReasonSignatureInvalid, []string{"does not cover this archive"}},
	} {
		inst := install(t, ns, tc.extension, tc.extension, "")
		got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, tc.reason)
		msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionInstalled).Message
		t.Logf("%s: %s", tc.reason, msg)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the message lacks %q:\n%s", tc.extension, w, msg)
			}
		}
		if _, err := get(t, configMapGVK, ns, tc.extension+"-"+tc.extension); !apierrors.IsNotFound(err) {
			t.Errorf("%s: refused, yet its ConfigMap exists (%v)", tc.extension, err)
		}
	}
}
