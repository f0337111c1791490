package resolve

import (
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

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
