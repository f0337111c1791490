package resolve

import (
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// TestSolveExplanations pins the exact text of each kind of failure: these
// messages are what a person reads on the installation's condition.
func TestSolveExplanations(t *testing.T) {
	certs := []v1alpha1.ExtensionVersion{
		ev("1.12.0", ">=1.25.0-0"), ev("1.14.0", ">=1.25.0-0"), ev("1.15.0", ">=1.29.0-0"), ev("1.16.2", ">=1.29.0-0"),
	}
	tests := []struct {
		name     string
		universe Universe
		cluster  string
		insts    []Installation
		failed   string // the installation that fails
		reason   string
		want     string
	}{
		{
			// The extension exists in no catalog.
			name: "missing extension", universe: Universe{"a": {ev("1.0.0", "")}}, cluster: "v1.30.0",
			insts:  []Installation{want("apps/nope", "nope", "")},
			failed: "apps/nope", reason: v1alpha1.ReasonExtensionNotFound,
			want: "no catalog offers an extension named \"nope\" (spec.extension of apps/nope); check the name with `kubectl get extensions`, or add a Catalog that offers nope.",
		},
		{
			// A dependency no catalog offers.
			name: "missing dependency", cluster: "v1.30.0",
			universe: Universe{"hello": {ev("0.1.0", "", "world ^1"), ev("0.2.0", "", "world ^1")}},
			insts:    []Installation{want("apps/hello", "hello", "")},
			failed:   "apps/hello", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/hello wants any version of hello; every version of hello needs world ^1, which no catalog offers. Add a Catalog that offers world.",
		},
		{
			// spec.version matches no version.
			name: "no version in range", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), ev("1.1.0", ""), ev("2.0.0", "")}},
			insts:    []Installation{want("apps/x", "x", "^3")},
			failed:   "apps/x", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/x wants x ^3, but no catalog offers a version in that range (available: 2.0.0, 1.1.0, 1.0.0). Change spec.version of apps/x.",
		},
		{
			// Every version in range needs a newer cluster; an older one fits.
			name: "kubeVersion too old", cluster: "v1.28.3",
			universe: Universe{"cert-manager": certs},
			insts:    []Installation{want("infra/cert", "cert-manager", ">=1.15")},
			failed:   "infra/cert", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "infra/cert wants cert-manager >=1.15; every cert-manager >=1.15 needs Kubernetes >=1.29.0; the cluster runs 1.28.3. Upgrade the cluster to 1.29 or later, or set spec.version of infra/cert to \"~1.14.0\".",
		},
		{
			// The cluster is newer than any version supports.
			name: "kubeVersion too new", cluster: "v1.33.0",
			universe: Universe{"legacy": {ev("1.0.0", "<1.30"), ev("1.1.0", ">=1.25 <1.32")}},
			insts:    []Installation{want("apps/legacy", "legacy", "")},
			failed:   "apps/legacy", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/legacy wants any version of legacy; legacy 1.0.0 needs Kubernetes <1.30; the cluster runs 1.33.0; legacy 1.1.0 needs Kubernetes >=1.25 <1.32. No version of legacy supports Kubernetes 1.33.0; ask the catalog owners for a release that does, or install it on another cluster.",
		},
		{
			// A GKE version is compared by its release part.
			name: "gke cluster", cluster: "v1.28.9-gke.1000",
			universe: Universe{"cert-manager": certs},
			insts:    []Installation{want("infra/cert", "cert-manager", "^1.16")},
			failed:   "infra/cert", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "infra/cert wants cert-manager ^1.16; cert-manager 1.16.2 needs Kubernetes >=1.29.0; the cluster runs 1.28.9 (v1.28.9-gke.1000). Upgrade the cluster to 1.29 or later, or set spec.version of infra/cert to \"~1.14.0\".",
		},
		{
			// A k3s version likewise, reached through a dependency.
			name: "k3s cluster via dependency", cluster: "v1.27.4+k3s1",
			universe: Universe{
				"ingress-nginx": {ev("4.11.0", "", "cert-manager >=1.15")},
				"cert-manager":  certs,
			},
			insts:  []Installation{want("edge/ingress", "ingress-nginx", "")},
			failed: "edge/ingress", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "edge/ingress wants any version of ingress-nginx; ingress-nginx 4.11.0 needs cert-manager >=1.15; every cert-manager >=1.15 needs Kubernetes >=1.29.0; the cluster runs 1.27.4 (v1.27.4+k3s1). Upgrade the cluster to 1.29 or later.",
		},
		{
			// app needs a and b; a needs c 1.x, b needs c 2.x.
			name: "diamond conflict", cluster: "v1.30.0",
			universe: Universe{
				"app": {ev("1.0.0", "", "a ^1", "b ^1")},
				"a":   {ev("1.0.0", "", "c ^1"), ev("1.1.0", "", "c ^1")},
				"b":   {ev("1.0.0", "", "c ^2")},
				"c":   {ev("1.0.0", ""), ev("2.0.0", "")},
			},
			insts:  []Installation{want("apps/app", "app", "")},
			failed: "apps/app", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/app wants any version of app; app 1.0.0 needs a ^1 and b ^1; every a ^1 needs c ^1; b 1.0.0 needs c ^2. No version of app has dependencies the catalogs can meet; ask the catalog owners for one that does.",
		},
		{
			// Two installations of one extension with disjoint ranges: the
			// one sorted last fails, the other is installed.
			name: "disjoint ranges", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", "")}},
			insts:    []Installation{want("team-a/x", "x", "^1"), want("team-b/x", "x", "^2")},
			failed:   "team-b/x", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "team-b/x wants x ^2; team-a/x wants x ^1 (one version of x serves the whole cluster). Set spec.version of team-b/x to \"~1.0.0\", or change spec.version of team-a/x.",
		},
		{
			// db is pinned at 1.0.0; a new app needs db 2.x.
			name: "pinned installed version", cluster: "v1.30.0",
			universe: Universe{
				"app": {ev("1.0.0", "", "db ^2")},
				"db":  {ev("1.0.0", ""), ev("2.0.0", "")},
			},
			insts:  []Installation{want("apps/app", "app", ""), pinned("data/db", "db", "", "1.0.0")},
			failed: "apps/app", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/app wants any version of app; app 1.0.0 needs db ^2; data/db keeps db 1.0.0 (installed; automatic upgrades are off). Turn on spec.upgrade.automatic of data/db.",
		},
		{
			// The cluster went back to 1.29; 2.x needs 1.30 and downgrades are off.
			name: "downgrade forbidden", cluster: "v1.29.5",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", ">=1.30"), ev("2.1.0", ">=1.30")}},
			insts:    []Installation{auto("apps/x", "x", "", "2.0.0", false)},
			failed:   "apps/x", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/x has x 2.0.0 installed and downgrades are not allowed; every x >=2.0.0 needs Kubernetes >=1.30; the cluster runs 1.29.5. Turn on spec.upgrade.allowDowngrade of apps/x to move it to 1.0.0, or upgrade the cluster to 1.30 or later.",
		},
		{
			// a and b need each other.
			name: "cycle", cluster: "v1.30.0",
			universe: Universe{"a": {ev("1.0.0", "", "b ^2")}, "b": {ev("2.0.0", "", "a ^1")}},
			insts:    []Installation{want("apps/a", "a", "")},
			failed:   "apps/a", reason: ReasonDependencyCycle,
			want: "apps/a wants any version of a; a 1.0.0 needs b ^2; a 1.0.0 → b 2.0.0 → a 1.0.0 is a dependency cycle. Remove the cycle from the catalog entries of a and b.",
		},
		{
			// A long chain ends at a kubeVersion; the middle is summarised.
			name: "deep chain", cluster: "v1.30.0",
			universe: Universe{
				"s1": {ev("1.0.0", "", "s2 ^1")}, "s2": {ev("1.0.0", "", "s3 ^1")}, "s3": {ev("1.0.0", "", "s4 ^1")},
				"s4": {ev("1.0.0", "", "s5 ^1")}, "s5": {ev("1.0.0", "", "s6 ^1")}, "s6": {ev("1.0.0", "", "s7 ^1")},
				"s7": {ev("1.0.0", "", "s8 ^1")}, "s8": {ev("1.0.0", ">=1.33")},
			},
			insts:  []Installation{want("apps/s1", "s1", "")},
			failed: "apps/s1", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/s1 wants any version of s1; s1 1.0.0 needs s2 ^1; s2 1.0.0 needs s3 ^1; … and 4 more steps; s7 1.0.0 needs s8 ^1; s8 1.0.0 needs Kubernetes >=1.33; the cluster runs 1.30.0. Upgrade the cluster to 1.33 or later.",
		},
		{
			// Only a pre-release exists; "^2" does not name one.
			name: "pre-release only", cluster: "v1.30.0",
			universe: Universe{"x": {ev("2.0.0-rc.1", "")}},
			insts:    []Installation{want("apps/x", "x", "^2")},
			failed:   "apps/x", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/x wants x ^2, but no catalog offers a version in that range (available: 2.0.0-rc.1); pre-releases match only a range that names one, such as \">=2.0.0-0\". Change spec.version of apps/x.",
		},
		{
			// A dependency's range matches none of its versions.
			name: "dependency range empty", cluster: "v1.30.0",
			universe: Universe{"a": {ev("1.0.0", "", "b ^3")}, "b": {ev("1.0.0", ""), ev("2.0.0", "")}},
			insts:    []Installation{want("apps/a", "a", "")},
			failed:   "apps/a", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/a wants any version of a; a 1.0.0 needs b ^3, but no b version is in that range (available: 2.0.0, 1.0.0). Add a Catalog that offers b ^3.",
		},
		{
			// Two installations need one shared dependency in disjoint ranges.
			name: "shared dependency conflict", cluster: "v1.30.0",
			universe: Universe{
				"web": {ev("1.0.0", "", "cache ^1")}, "jobs": {ev("1.0.0", "", "cache ^2"), ev("0.9.0", "", "cache ^2")},
				"cache": {ev("1.0.0", ""), ev("2.0.0", "")},
			},
			insts:  []Installation{want("apps/web", "web", ""), want("batch/jobs", "jobs", "")},
			failed: "batch/jobs", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "batch/jobs wants any version of jobs; every version of jobs needs cache ^2; apps/web wants any version of web; web 1.0.0 needs cache ^1. Remove apps/web.",
		},
		{
			// spec.version excludes the version kept by the policy.
			name: "pinned outside range", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", "")}},
			insts:    []Installation{pinned("apps/x", "x", "^2", "1.0.0")},
			failed:   "apps/x", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/x wants x ^2; apps/x keeps x 1.0.0 (installed; automatic upgrades are off). Turn on spec.upgrade.automatic of apps/x to move it to 2.0.0.",
		},
		{
			// The pinned version left the catalog.
			name: "pinned version gone", cluster: "v1.30.0",
			universe: Universe{"x": {ev("2.0.0", "")}},
			insts:    []Installation{pinned("apps/x", "x", "", "1.0.0")},
			failed:   "apps/x", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "apps/x keeps x 1.0.0 (installed; automatic upgrades are off), but no catalog offers x 1.0.0 any more. Turn on spec.upgrade.automatic of apps/x, or add a Catalog that offers x 1.0.0.",
		},
		{
			// spec.version is not a range.
			name: "invalid range", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", "")}},
			insts:    []Installation{want("apps/x", "x", "^^1")},
			failed:   "apps/x", reason: v1alpha1.ReasonNoMatchingVersion,
			want: "spec.version of apps/x: \"^^1\" is not a version range (improper constraint: \"^^1\"); use e.g. \"^1.4\", \">=1.2 <2\" or \"*\".",
		},
		{
			// Discovery reported something that is not a version.
			name: "bad cluster version", cluster: "unknown",
			universe: Universe{"x": {ev("1.0.0", "")}},
			insts:    []Installation{want("apps/x", "x", "")},
			failed:   "apps/x", reason: v1alpha1.ReasonClusterUnavailable,
			want: "the cluster reports Kubernetes version \"unknown\", which is not a semantic version; no version of x can be checked against it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resolution := NewIndex(tt.universe).Solve(Problem{ClusterVersion: tt.cluster, Installations: tt.insts})
			ex := resolution.Failed[tt.failed]
			if ex == nil {
				t.Fatalf("%s did not fail; resolution %+v", tt.failed, resolution)
			}
			if len(resolution.Failed) != 1 {
				t.Errorf("want only %s to fail, got %v", tt.failed, resolution.Failed)
			}
			if ex.Reason != tt.reason {
				t.Errorf("reason %s, want %s", ex.Reason, tt.reason)
			}
			if ex.Message != tt.want {
				t.Errorf("message\n got: %s\nwant: %s", ex.Message, tt.want)
			}
		})
	}
}
