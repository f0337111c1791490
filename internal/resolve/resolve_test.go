package resolve

import (
	"errors"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func versions(vs ...v1alpha1.ExtensionVersion) []v1alpha1.ExtensionVersion { return vs }

func ver(v, kube string) v1alpha1.ExtensionVersion {
	return v1alpha1.ExtensionVersion{Version: v, KubeVersion: kube}
}

func TestResolve(t *testing.T) {
	catalog := versions(ver("1.0.0", ""), ver("1.1.0", ">=1.28.0-0"), ver("2.0.0", ">=1.30"), ver("2.1.0-rc.1", ""))
	deprecatedTop := versions(ver("1.0.0", ""), v1alpha1.ExtensionVersion{Version: "1.2.0", Deprecated: true})
	tests := []struct {
		name    string
		req     Request
		want    string // chosen version
		kept    bool
		wantErr string // exact explanation
	}{
		{
			// The highest version that fits range and cluster wins; the pre-release is skipped.
			name: "highest fitting", want: "2.0.0",
			req: Request{Extension: "x", Found: true, Versions: catalog, Range: "*", ClusterVersion: "v1.31.0"},
		},
		{
			// Vendor suffixes on the cluster version do not hide the release.
			name: "gke cluster version", want: "2.0.0",
			req: Request{Extension: "x", Found: true, Versions: catalog, Range: "", ClusterVersion: "v1.33.4-gke.100"},
		},
		{
			// k3s build metadata likewise.
			name: "k3s cluster version", want: "1.1.0",
			req: Request{Extension: "x", Found: true, Versions: catalog, Range: "^1", ClusterVersion: "v1.29.2+k3s1"},
		},
		{
			// A range naming a pre-release admits it.
			name: "prerelease named", want: "2.1.0-rc.1",
			req: Request{Extension: "x", Found: true, Versions: catalog, Range: ">=2.1.0-0", ClusterVersion: "v1.31.0"},
		},
		{
			// The cluster is too old for 2.x: the highest 1.x that fits.
			name: "kube version filters", want: "1.1.0",
			req: Request{Extension: "x", Found: true, Versions: catalog, Range: "*", ClusterVersion: "v1.29.0"},
		},
		{
			// Automatic upgrades off: keep what is installed.
			name: "keep installed", want: "1.0.0", kept: true,
			req: Request{Extension: "x", Found: true, Versions: catalog, ClusterVersion: "v1.31.0", Installed: "1.0.0"},
		},
		{
			// Automatic on: move up.
			name: "automatic upgrade", want: "2.0.0",
			req: Request{Extension: "x", Found: true, Versions: catalog, ClusterVersion: "v1.31.0", Installed: "1.0.0", Automatic: true},
		},
		{
			// The cluster went back to 1.29: 2.0.0 no longer fits, and downgrades are allowed.
			name: "downgrade allowed", want: "1.1.0",
			req: Request{Extension: "x", Found: true, Versions: catalog, ClusterVersion: "v1.29.0", Installed: "2.0.0", Automatic: true, AllowDowngrade: true},
		},
		{
			// Deprecated versions lose to non-deprecated ones.
			name: "deprecated avoided", want: "1.0.0",
			req: Request{Extension: "x", Found: true, Versions: deprecatedTop, ClusterVersion: "v1.31.0"},
		},
		{
			// A deprecated version is used when nothing else fits.
			name: "deprecated as last resort", want: "1.2.0",
			req: Request{Extension: "x", Found: true, Versions: deprecatedTop, Range: ">=1.2", ClusterVersion: "v1.31.0"},
		},
		{
			// Unknown extension names the field and the fix.
			name: "not found",
			req:  Request{Extension: "nope", ClusterVersion: "v1.31.0"},
			wantErr: `spec.extension: no catalog offers an extension named "nope"; check the name with ` +
				"`kubectl get extensions`, or add a Catalog that provides it",
		},
		{
			// No version in range lists what exists.
			name:    "no version in range",
			req:     Request{Extension: "x", Found: true, Versions: catalog, Range: ">=3", ClusterVersion: "v1.31.0"},
			wantErr: `spec.version: no version of x satisfies ">=3" (available: 2.1.0-rc.1, 2.0.0, 1.1.0, 1.0.0); change spec.version`,
		},
		{
			// In range, but the cluster is too old.
			name: "cluster too old",
			req:  Request{Extension: "x", Found: true, Versions: catalog, Range: "^2", ClusterVersion: "v1.27.3"},
			wantErr: `no version of x within "^2" supports the cluster's Kubernetes 1.27.3: x 2.0.0 needs Kubernetes ">=1.30". ` +
				"Upgrade the cluster, or change spec.version to a range with a version that supports 1.27.3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolver{}.Resolve(tt.req)
			if tt.wantErr != "" {
				var ex *Explanation
				if !errors.As(err, &ex) {
					t.Fatalf("want explanation, got %v (choice %s)", err, got.Version.Version)
				}
				if ex.Message != tt.wantErr {
					t.Fatalf("message\n got: %s\nwant: %s", ex.Message, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Version.Version != tt.want || got.Kept != tt.kept {
				t.Fatalf("got %s kept=%v, want %s kept=%v", got.Version.Version, got.Kept, tt.want, tt.kept)
			}
		})
	}
}

func TestUnmetDependencies(t *testing.T) {
	v := v1alpha1.ExtensionVersion{Version: "0.2.0", Dependencies: []v1alpha1.Dependency{{Name: "crd", Version: ">=1.1.0"}}}
	tests := []struct {
		name    string
		present map[string][]Present
		want    []string
	}{
		// Nothing installed: say which installation to create.
		{"missing", nil, []string{"hello 0.2.0 needs crd >=1.1.0, which is not installed on this cluster; create an ExtensionInstallation for crd"}},
		// Installed in range and Ready: met.
		{"met", map[string][]Present{"crd": {{Installation: "a/crd", Version: "1.1.0", Ready: true}}}, nil},
		// Installed but too old.
		{"too old", map[string][]Present{"crd": {{Installation: "a/crd", Version: "1.0.0", Ready: true}}},
			[]string{"hello 0.2.0 needs crd >=1.1.0: a/crd runs 1.0.0"}},
		// Installed in range but not Ready yet.
		{"not ready", map[string][]Present{"crd": {{Installation: "a/crd", Version: "1.1.0"}}},
			[]string{"hello 0.2.0 needs crd >=1.1.0: a/crd (1.1.0) is not Ready yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UnmetDependencies("hello", v, tt.present)
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("got %q, want %q", got[i], tt.want[i])
				}
			}
		})
	}
}
