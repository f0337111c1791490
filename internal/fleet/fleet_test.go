package fleet

import (
	"strings"
	"testing"
)

func TestInstallationName(t *testing.T) {
	long := strings.Repeat("c", 60)
	for _, tc := range []struct{ ext, cluster, want string }{
		// On the hub, the extension's name, as the README's walkthrough shows.
		{"greetings-crd", "", "greetings-crd"},
		// On a managed cluster, one per cluster.
		{"greetings-crd", "edge-1", "greetings-crd-edge-1"},
		// A dot in the cluster's name would not do as a release name.
		{"hello", "eu.edge-1", "hello-eu-edge-1"},
	} {
		if got := InstallationName(tc.ext, tc.cluster); got != tc.want {
			t.Errorf("InstallationName(%q, %q) = %q, want %q", tc.ext, tc.cluster, got, tc.want)
		}
	}
	// Too long for a label value: shortened, distinct per cluster.
	a, b := InstallationName("greetings-crd", long), InstallationName("greetings-crd", long+"x")
	if len(a) > 63 || len(b) > 63 || a == b || !strings.HasPrefix(a, "greetings-crd-ccc") {
		t.Errorf("long names %q and %q: want at most 63 characters each, distinct", a, b)
	}
}

func TestClusterName(t *testing.T) {
	if got := ClusterName(""); got != "the hub cluster" {
		t.Errorf("ClusterName(\"\") = %q", got)
	}
	if got := ClusterName("edge-1"); got != "cluster edge-1" {
		t.Errorf("ClusterName(\"edge-1\") = %q", got)
	}
}
