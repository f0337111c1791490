package kubeapis

import (
	"testing"

	"github.com/Masterminds/semver/v3"
)

func TestRemovedIn(t *testing.T) {
	for _, tc := range []struct {
		group, version, kind, kube string
		want                       string // RemovedIn, "" when served
	}{
		// Removed in 1.32: gone at 1.32 and later, served before.
		{"flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema", "1.32.0", "1.32"},
		{"flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema", "v1.37.1", "1.32"},
		{"flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema", "1.31.4", ""},
		// A kind-specific removal does not cover other kinds of the version.
		{"policy", "v1beta1", "PodDisruptionBudget", "1.25.0", "1.25"},
		{"extensions", "v1beta1", "Ingress", "1.21.0", ""},
		{"extensions", "v1beta1", "Ingress", "1.22.0", "1.22"},
		// Current APIs are served.
		{"apps", "v1", "Deployment", "1.37.0", ""},
		{"", "v1", "ConfigMap", "1.37.0", ""},
	} {
		r, err := RemovedIn(tc.group, tc.version, tc.kind, tc.kube)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if r != nil {
			got = r.RemovedIn
		}
		if got != tc.want {
			t.Errorf("%s/%s %s at %s: removed in %q, want %q", tc.group, tc.version, tc.kind, tc.kube, got, tc.want)
		}
	}
	if _, err := RemovedIn("apps", "v1", "Deployment", "next"); err == nil {
		t.Error("a version that does not parse must be an error")
	}
	// The table stays sorted by release, and every entry says what to use.
	for i, r := range Removals {
		if r.Use == "" {
			t.Errorf("%s/%s: no replacement", r.Group, r.Version)
		}
		if i > 0 && semver.MustParse(Removals[i-1].RemovedIn).GreaterThan(semver.MustParse(r.RemovedIn)) {
			t.Errorf("%s/%s (%s) is out of order", r.Group, r.Version, r.RemovedIn)
		}
	}
}
