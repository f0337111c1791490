package bundle

import (
	"bytes"
	"crypto/x509"
	"testing"
	"time"
)

func TestIssueCertificates(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	names := []string{"op-service.ops.svc"}
	first, err := IssueCertificates(CertificateRequest{Now: t0, CAName: "annex-ops-op", DNSNames: names})
	if err != nil {
		t.Fatal(err)
	}
	other, err := IssueCertificates(CertificateRequest{Now: t0, CAName: "annex-other", DNSNames: names})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                string
		now                 time.Time
		dnsNames            []string
		ca, serving         *KeyPair
		wantNewCA, wantNewS bool
	}{
		// Nothing in the cluster: a CA and a serving certificate.
		{name: "fresh", now: t0, dnsNames: names, wantNewCA: true, wantNewS: true},
		// Both valid: reused as they are, on every reconcile.
		{name: "reused", now: t0.Add(time.Hour), dnsNames: names, ca: &first.CA, serving: &first.Serving},
		// Still 121 days left: kept.
		{name: "before renewal", now: first.ServingNotAfter.Add(-ServingRenewBefore - 24*time.Hour), dnsNames: names, ca: &first.CA, serving: &first.Serving},
		// Less than ServingRenewBefore left: a new serving certificate from the same CA.
		{name: "serving renewed", now: first.ServingNotAfter.Add(-ServingRenewBefore + time.Hour), dnsNames: names, ca: &first.CA, serving: &first.Serving, wantNewS: true},
		// Expired altogether: renewed too.
		{name: "serving expired", now: first.ServingNotAfter.Add(time.Hour), dnsNames: names, ca: &first.CA, serving: &first.Serving, wantNewS: true},
		// The Service was renamed: the names differ, a new serving certificate.
		{name: "names changed", now: t0, dnsNames: []string{"op2-service.ops.svc"}, ca: &first.CA, serving: &first.Serving, wantNewS: true},
		// The CA is near its end: a new CA and a new serving certificate.
		{name: "ca renewed", now: first.CANotAfter.Add(-CARenewBefore + time.Hour), dnsNames: names, ca: &first.CA, serving: &first.Serving, wantNewCA: true, wantNewS: true},
		// A serving certificate of another CA is not trusted by this one.
		{name: "foreign serving", now: t0, dnsNames: names, ca: &first.CA, serving: &other.Serving, wantNewS: true},
		// A key that is not the certificate's: replaced.
		{name: "mismatched key", now: t0, dnsNames: names, ca: &KeyPair{Cert: first.CA.Cert, Key: other.CA.Key}, serving: &first.Serving, wantNewCA: true, wantNewS: true},
		// Garbage in the Secret: replaced.
		{name: "garbage", now: t0, dnsNames: names, ca: &KeyPair{Cert: []byte("x"), Key: []byte("y")}, serving: &KeyPair{}, wantNewCA: true, wantNewS: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IssueCertificates(CertificateRequest{Now: tc.now, CAName: "annex-ops-op", DNSNames: tc.dnsNames, CA: tc.ca, Serving: tc.serving})
			if err != nil {
				t.Fatal(err)
			}
			if got.NewCA != tc.wantNewCA || got.NewServing != tc.wantNewS {
				t.Errorf("new CA %v, new serving %v; want %v, %v", got.NewCA, got.NewServing, tc.wantNewCA, tc.wantNewS)
			}
			if !tc.wantNewCA && !bytes.Equal(got.CA.Cert, tc.ca.Cert) {
				t.Error("the CA was not reused")
			}
			if !tc.wantNewS && !bytes.Equal(got.Serving.Cert, tc.serving.Cert) {
				t.Error("the serving certificate was not reused")
			}
			// Whatever was chosen verifies for the names at that time.
			ca, err := parseCert(got.CA.Cert)
			if err != nil {
				t.Fatal(err)
			}
			serving, err := parseCert(got.Serving.Cert)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca)
			if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.dnsNames[0], CurrentTime: tc.now}); err != nil {
				t.Errorf("serving certificate does not verify: %v", err)
			}
			if _, _, ok := parsePair(&got.Serving); !ok {
				t.Error("serving key does not match its certificate")
			}
			if left := serving.NotAfter.Sub(tc.now); left < ServingRenewBefore {
				t.Errorf("serving certificate has only %s left", left)
			}
		})
	}
}

// A CA replaced before it expires stays trusted beside the new one until
// it does, on every render after the replacement too.
func TestIssueCertificatesKeepsPreviousCA(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	names := []string{"op-service.ops.svc"}
	first, err := IssueCertificates(CertificateRequest{Now: t0, CAName: "ca", DNSNames: names})
	if err != nil {
		t.Fatal(err)
	}
	if first.PreviousCA != nil || !bytes.Equal(first.Bundle(), first.CA.Cert) {
		t.Fatal("a first CA has no previous one")
	}
	renewal := first.CANotAfter.Add(-CARenewBefore + time.Hour)
	second, err := IssueCertificates(CertificateRequest{Now: renewal, CAName: "ca", DNSNames: names, CA: &first.CA, Serving: &first.Serving})
	if err != nil {
		t.Fatal(err)
	}
	if !second.NewCA || !bytes.Equal(second.PreviousCA, first.CA.Cert) {
		t.Fatalf("new CA %v; previous CA kept %v", second.NewCA, bytes.Equal(second.PreviousCA, first.CA.Cert))
	}
	if want := append(append([]byte(nil), second.CA.Cert...), first.CA.Cert...); !bytes.Equal(second.Bundle(), want) {
		t.Error("the bundle is not the new CA then the previous one")
	}
	// The next render, with what the first wrote, keeps both.
	again, err := IssueCertificates(CertificateRequest{Now: renewal.Add(time.Hour), CAName: "ca", DNSNames: names, CA: &second.CA, Serving: &second.Serving, PreviousCA: second.PreviousCA})
	if err != nil {
		t.Fatal(err)
	}
	if again.NewCA || again.NewServing || !bytes.Equal(again.Bundle(), second.Bundle()) {
		t.Error("the render after a CA renewal changed the certificates")
	}
	// Once the previous CA has expired, it is dropped.
	later, err := IssueCertificates(CertificateRequest{Now: first.CANotAfter.Add(time.Hour), CAName: "ca", DNSNames: names, CA: &second.CA, Serving: &second.Serving, PreviousCA: second.PreviousCA})
	if err != nil {
		t.Fatal(err)
	}
	if later.PreviousCA != nil {
		t.Error("an expired previous CA is still trusted")
	}
}

// What is issued on one day expires at the same instant, so that renders
// before the first apply describe the same certificates.
func TestIssueCertificatesExpiryRounded(t *testing.T) {
	a, err := IssueCertificates(CertificateRequest{Now: time.Date(2026, 1, 2, 1, 0, 0, 0, time.UTC), CAName: "ca", DNSNames: []string{"s.ns.svc"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := IssueCertificates(CertificateRequest{Now: time.Date(2026, 1, 2, 23, 0, 0, 0, time.UTC), CAName: "ca", DNSNames: []string{"s.ns.svc"}})
	if err != nil {
		t.Fatal(err)
	}
	if !a.ServingNotAfter.Equal(b.ServingNotAfter) || !a.CANotAfter.Equal(b.CANotAfter) {
		t.Errorf("expiries differ: %s/%s and %s/%s", a.CANotAfter, a.ServingNotAfter, b.CANotAfter, b.ServingNotAfter)
	}
}
