package localcluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestEnsurePKIReusesCredentials checks that a second start keeps the CA and
// token (so old kubeconfigs work) and renews only a serving certificate that
// is about to expire.
func TestEnsurePKIReusesCredentials(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	first, err := ensurePKI(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	servingBefore := readFile(t, dir, servingCertFile)

	tests := []struct {
		name        string
		now         time.Time
		wantRenewed bool
	}{
		// A day later nothing changes.
		{name: "fresh serving certificate", now: now.Add(24 * time.Hour), wantRenewed: false},
		// Within a month of expiry the serving certificate is replaced.
		{name: "serving certificate near expiry", now: now.Add(servingValidity - 7*24*time.Hour), wantRenewed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			again, err := ensurePKI(dir, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if again.token != first.token || string(again.caPEM) != string(first.caPEM) {
				t.Error("CA or admin token changed between starts")
			}
			serving := readFile(t, dir, servingCertFile)
			if renewed := string(serving) != string(servingBefore); renewed != tc.wantRenewed {
				t.Errorf("serving certificate renewed = %v, want %v", renewed, tc.wantRenewed)
			}
			verifyServing(t, first.caPEM, serving, tc.now)
		})
	}
}

// verifyServing checks that the serving certificate is valid for 127.0.0.1
// under the CA at the given time.
func verifyServing(t *testing.T, caPEM, servingPEM []byte, at time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA is not PEM")
	}
	block, _ := pem.Decode(servingPEM)
	if block == nil {
		t.Fatal("serving certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1", CurrentTime: at}); err != nil {
		t.Errorf("serving certificate does not verify for 127.0.0.1: %v", err)
	}
}

// TestResolveAPIPort checks which API port a start uses and that it is
// remembered for the next.
func TestResolveAPIPort(t *testing.T) {
	tests := []struct {
		name       string
		remembered int // 0: no state file
		want       int // Options.APIPort
		expect     int // 0: any free port
	}{
		// First start without a port: pick one.
		{name: "first start picks a port"},
		// Restart without a port: keep the kubeconfig's port.
		{name: "restart reuses the remembered port", remembered: 16443, expect: 16443},
		// An explicit port wins over the remembered one, and is remembered.
		{name: "explicit port wins", remembered: 16443, want: 26443, expect: 26443},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.remembered != 0 {
				if _, err := resolveAPIPort(dir, tc.remembered); err != nil {
					t.Fatal(err)
				}
			}
			got, err := resolveAPIPort(dir, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got == 0 || (tc.expect != 0 && got != tc.expect) {
				t.Fatalf("port = %d, want %d (0: any)", got, tc.expect)
			}
			if again, err := resolveAPIPort(dir, 0); err != nil || again != got {
				t.Errorf("next start gets port %d (%v), want the remembered %d", again, err, got)
			}
		})
	}
}

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
