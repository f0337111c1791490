package catalog_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
)

// TestAccessRefusals: credentials over plain http and half a client
// certificate are refused with the field to fix.
func TestAccessRefusals(t *testing.T) {
	tests := []struct {
		name   string
		url    string
		secret map[string][]byte
		want   string
	}{
		// Plain http would show the password to anyone on the way.
		{"credentials over http", "http://charts.example.com", map[string][]byte{"token": []byte("t")}, "credentials are not sent over plain http; use an https:// URL, or set spec.source.helm.insecure"},
		// A certificate without its key cannot be used.
		{"cert without key", "https://charts.example.com", map[string][]byte{"tls.crt": []byte("x")}, "has only one of tls.crt and tls.key"},
		// Two kinds of credentials are ambiguous.
		{"token and password", "https://charts.example.com", map[string][]byte{"token": []byte("t"), "username": []byte("u")}, "keep one kind of credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{
				Helm: &v1alpha1.HelmSource{URL: tt.url, SecretRef: &v1alpha1.SecretReference{Namespace: "ns", Name: "s"}},
			}}}
			_, err := catalog.AccessFor(context.Background(), catalogtest.Lookup{Secrets: map[string]map[string][]byte{"ns/s": tt.secret}}, cat)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "spec.source.helm.secretRef") {
				t.Fatalf("AccessFor() = %v, want an error naming the field and %q", err, tt.want)
			}
		})
	}
}

// TestInsecureAllowsPlainHTTP: spec.source.helm.insecure lets credentials
// travel over plain http, on the repository's host only.
func TestInsecureAllowsPlainHTTP(t *testing.T) {
	cat := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{
		Helm: &v1alpha1.HelmSource{URL: "http://charts.example.com", Insecure: true, SecretRef: &v1alpha1.SecretReference{Namespace: "ns", Name: "s"}},
	}}}
	a, err := catalog.AccessFor(context.Background(), catalogtest.Lookup{Secrets: map[string]map[string][]byte{"ns/s": {"token": []byte("t")}}}, cat)
	if err != nil || !a.AllowHTTP || a.Host != "charts.example.com" {
		t.Fatalf("AccessFor() = %+v, %v", a, err)
	}
}
