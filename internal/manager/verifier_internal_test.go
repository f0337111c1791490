package manager

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/testenv"
)

// TestDefaultPolicyConfigMap reads the cluster default policy from a
// real API server: missing, then not a policy (both refuse, naming the
// ConfigMap), then a policy, and a change applies at the next read.
func TestDefaultPolicyConfigMap(t *testing.T) {
	c := testenv.Start(t).Client
	ctx := context.Background()
	read := defaultPolicy(c, "default", "annex-verify-policy")
	invalid := func(want string) {
		t.Helper()
		_, err := read(ctx)
		var e *sources.InvalidDefaultPolicyError
		if !errors.As(err, &e) || !strings.Contains(e.Problem, "default/annex-verify-policy") || !strings.Contains(e.Problem, want) {
			t.Fatalf("want an invalid default naming the ConfigMap and %q, got %v", want, err)
		}
	}
	invalid("does not exist")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "annex-verify-policy"},
		Data: map[string]string{sources.DefaultPolicyKey: "provider: Cosign\nmode: Sometimes\n"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	invalid(`mode "Sometimes"`)

	cm.Data[sources.DefaultPolicyKey] = "provider: Cosign\nmode: Audit\ncosign:\n  keys:\n  - name: release\n    publicKey: x\n"
	if err := c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	p, err := read(ctx)
	if err != nil || p.Mode != v1alpha1.VerificationAudit || p.Cosign.Keys[0].Name != "release" {
		t.Fatalf("got %+v, %v", p, err)
	}
}
