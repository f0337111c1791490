package imagepolicy

import "testing"

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name    string
		images  []string
		policy  Policy
		ok      bool
		message string
	}{
		// No policy allows everything.
		{"open", []string{"nginx:1"}, Policy{}, true, "1 image allowed"},
		{"registry allowed", []string{"ghcr.io/stefanprodan/podinfo:6.5.0"}, Policy{AllowedRegistries: []string{"ghcr.io"}}, true, "1 image allowed"},
		// Docker Hub images without a registry are docker.io/library/….
		{"docker hub by prefix", []string{"nginx:1.27"}, Policy{AllowedRegistries: []string{"docker.io/library"}}, true, "1 image allowed"},
		// A prefix matches whole path components only.
		{"prefix is a path", []string{"ghcr.io/acme-evil/x:1"}, Policy{AllowedRegistries: []string{"ghcr.io/acme"}}, false,
			"1 of 1 image not allowed: ghcr.io/acme-evil/x:1 (not from an allowed registry); allowed registries: ghcr.io/acme; choose allowed images in the installation's spec.values, or change the policy (the Hook's imagepolicy.annex.dev/allowed-registries and imagepolicy.annex.dev/require-digest annotations)"},
		{"port and digest", []string{"localhost:5000/app@sha256:abc"}, Policy{AllowedRegistries: []string{"localhost:5000"}, RequireDigest: true}, true, "1 image allowed"},
		{"two reasons", []string{"registry.k8s.io/pause:3.9", "quay.io/x/y:1"}, Policy{AllowedRegistries: []string{"registry.k8s.io"}, RequireDigest: true}, false,
			"2 of 2 images not allowed: registry.k8s.io/pause:3.9 (not pinned by digest); quay.io/x/y:1 (not from an allowed registry, not pinned by digest); allowed registries: registry.k8s.io; choose allowed images in the installation's spec.values, or change the policy (the Hook's imagepolicy.annex.dev/allowed-registries and imagepolicy.annex.dev/require-digest annotations)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, msg := Evaluate(c.images, c.policy)
			if ok != c.ok || msg != c.message {
				t.Fatalf("got %v %q, want %v %q", ok, msg, c.ok, c.message)
			}
		})
	}
}

func TestPolicyOf(t *testing.T) {
	p := PolicyOf(map[string]string{AnnotationAllowedRegistries: " ghcr.io/, registry.k8s.io ,,", AnnotationRequireDigest: "true"})
	if len(p.AllowedRegistries) != 2 || p.AllowedRegistries[0] != "ghcr.io" || p.AllowedRegistries[1] != "registry.k8s.io" || !p.RequireDigest {
		t.Fatalf("%+v", p)
	}
}
