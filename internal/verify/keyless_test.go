package verify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/verify"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

const (
	githubIssuer = "https://token.actions.githubusercontent.com"
	workflow     = "https://github.com/example/charts/.github/workflows/release.yaml@refs/heads/main"
)

// keylessSign signs digest with a fresh leaf of ca for issuer and
// subject, the chain holding chain's PEM.
func keylessSign(t testing.TB, ca *verifytest.CA, chain []byte, issuer, subject, digest string) verify.Signature {
	t.Helper()
	key, cert := ca.Leaf(t, issuer, subject)
	payload, sig, err := verify.Sign(key, nil, repository, digest)
	if err != nil {
		t.Fatal(err)
	}
	return verify.Signature{Payload: payload, Signature: sig, Certificate: string(cert), Chain: string(chain)}
}

func TestVerifyKeyless(t *testing.T) {
	root := verifytest.NewRoot(t, "test root")
	inter := root.Intermediate(t, "test intermediate")
	otherRoot := verifytest.NewRoot(t, "someone else's root")
	art := verify.Artifact{Ref: "demo 1.0.0", Digest: digestA}
	exact := verify.IdentityRule{Issuer: githubIssuer, Subject: workflow}
	regexpRule := verify.IdentityRule{Issuer: githubIssuer, SubjectRegExp: `https://github\.com/example/.+`}
	good := keylessSign(t, inter, inter.PEM, githubIssuer, workflow, digestA)
	corrupt := good
	corrupt.Signature = "bm90IGEgc2lnbmF0dXJl"

	cases := []struct {
		name   string
		rules  []verify.IdentityRule
		sigs   []verify.Signature
		signer string
		reason string
		want   []string
	}{
		{name: "exact identity, through an intermediate", rules: []verify.IdentityRule{exact}, sigs: []verify.Signature{good},
			signer: `issuer "` + githubIssuer + `", subject "` + workflow + `"`},
		{name: "subject by regular expression", rules: []verify.IdentityRule{regexpRule}, sigs: []verify.Signature{good}, signer: workflow},
		{name: "email subject", rules: []verify.IdentityRule{{IssuerRegExp: `https://accounts\.example\.com`, Subject: "rel@example.com"}},
			sigs: []verify.Signature{keylessSign(t, inter, inter.PEM, "https://accounts.example.com", "rel@example.com", digestA)}, signer: "rel@example.com"},
		{name: "leaf signed by the root directly", rules: []verify.IdentityRule{exact}, sigs: []verify.Signature{keylessSign(t, root, nil, githubIssuer, workflow, digestA)}, signer: workflow},
		{name: "no certificate", rules: []verify.IdentityRule{exact}, reason: verify.ReasonSignatureMissing,
			want: []string{"no keyless cosign signature", `issuer "` + githubIssuer + `"`}},
		{name: "wrong issuer", rules: []verify.IdentityRule{exact}, sigs: []verify.Signature{keylessSign(t, inter, inter.PEM, "https://evil.example.com", workflow, digestA)},
			reason: verify.ReasonIdentityMismatch, want: []string{`found signature 1 by issuer "https://evil.example.com", subject "` + workflow + `"`, "keyless.identities"}},
		{name: "subject outside the expression", rules: []verify.IdentityRule{regexpRule}, sigs: []verify.Signature{keylessSign(t, inter, inter.PEM, githubIssuer, "https://github.com/other/x", digestA)},
			reason: verify.ReasonIdentityMismatch, want: []string{`subject matching "https://github\\.com/example/.+"`, `subject "https://github.com/other/x"`}},
		{name: "untrusted root", rules: []verify.IdentityRule{exact}, sigs: []verify.Signature{keylessSign(t, otherRoot, nil, githubIssuer, workflow, digestA)},
			reason: verify.ReasonSignatureInvalid, want: []string{"does not chain to a trusted root"}},
		{name: "chain missing", rules: []verify.IdentityRule{exact}, sigs: []verify.Signature{keylessSign(t, inter, nil, githubIssuer, workflow, digestA)},
			reason: verify.ReasonSignatureInvalid, want: []string{"does not chain"}},
		{name: "tampered: signed another digest", rules: []verify.IdentityRule{exact}, sigs: []verify.Signature{keylessSign(t, inter, inter.PEM, githubIssuer, workflow, digestB)},
			reason: verify.ReasonSignatureInvalid, want: []string{"covers digest " + digestB}},
		{name: "corrupt signature", rules: []verify.IdentityRule{exact}, sigs: []verify.Signature{corrupt}, reason: verify.ReasonSignatureInvalid, want: []string{"corrupt or forged"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := verify.ParseKeylessPolicy(root.PEM, tc.rules)
			if err != nil {
				t.Fatal(err)
			}
			id, err := verify.VerifyKeyless(art, p, tc.sigs)
			if tc.signer != "" {
				if err != nil || !strings.Contains(id.String(), tc.signer) {
					t.Fatalf("want signed by %s, got %q, %v", tc.signer, id, err)
				}
				return
			}
			var verr *verify.Error
			if !errors.As(err, &verr) || verr.Reason != tc.reason {
				t.Fatalf("want *verify.Error %s, got %v", tc.reason, err)
			}
			for _, w := range append(tc.want, "demo 1.0.0", digestA) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q:\n%s", w, err)
				}
			}
		})
	}
}

func TestParseKeylessPolicy(t *testing.T) {
	root := verifytest.NewRoot(t, "r")
	for _, bad := range []struct {
		roots string
		rules []verify.IdentityRule
		want  string
	}{
		{"not pem", []verify.IdentityRule{{Issuer: "i", Subject: "s"}}, "no PEM certificate"},
		{string(root.PEM), nil, "at least one"},
		{string(root.PEM), []verify.IdentityRule{{Issuer: "i", IssuerRegExp: "i", Subject: "s"}}, "exactly one of issuer"},
		{string(root.PEM), []verify.IdentityRule{{Issuer: "i"}}, "exactly one of subject"},
		{string(root.PEM), []verify.IdentityRule{{Issuer: "i", SubjectRegExp: "("}}, "identities[0].subjectRegExp"},
	} {
		if _, err := verify.ParseKeylessPolicy([]byte(bad.roots), bad.rules); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("want an error with %q, got %v", bad.want, err)
		}
	}
	a, _ := verify.ParseKeylessPolicy(root.PEM, []verify.IdentityRule{{Issuer: "i", Subject: "s"}})
	b, _ := verify.ParseKeylessPolicy(root.PEM, []verify.IdentityRule{{Issuer: "i", SubjectRegExp: "s"}})
	if a.ID == "" || a.ID == b.ID {
		t.Fatalf("policy ids %q and %q", a.ID, b.ID)
	}
}
