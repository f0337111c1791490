package resolve

import (
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestChoiceMessage(t *testing.T) {
	v := func(version string) v1alpha1.ExtensionVersion { return v1alpha1.ExtensionVersion{Version: version} }
	for _, tc := range []struct {
		name string
		sel  Selection
		want string
	}{
		// A plain choice names the version and the cluster's Kubernetes.
		{"plain", Selection{Version: v("1.2.0")}, "chose x 1.2.0 for Kubernetes v1.31.2"},
		// spec.upgrade held the installed version back.
		{"kept", Selection{Version: v("1.0.0"), Kept: true},
			"chose x 1.0.0 for Kubernetes v1.31.2 (kept the installed version: spec.upgrade does not allow moving it)"},
		// The package's default channel says how to choose another.
		{"default channel", Selection{Version: v("1.2.0"), Channel: "stable", DefaultChannelUsed: true},
			"chose x 1.2.0 for Kubernetes v1.31.2, channel stable (the package's default; set spec.channel to choose another)"},
		// A channel the installation named.
		{"named channel", Selection{Version: v("1.2.0"), Channel: "fast"}, "chose x 1.2.0 for Kubernetes v1.31.2, channel fast"},
		// Each required API names its provider and why it.
		{"providers", Selection{Version: v("1.2.0"), Providers: []ProviderChoice{
			{API: "a.io/v1/A", Provider: "pa", Reason: "the only one"}, {API: "b.io/v1/B", Provider: "pb", Reason: "installed"}}},
			"chose x 1.2.0 for Kubernetes v1.31.2; it requires a.io/v1/A, from pa (the only one); it requires b.io/v1/B, from pb (installed)"},
		// One hop of an upgrade graph names the target and the hop.
		{"hop", Selection{Version: v("0.2.0"), Kept: true, Channel: "stable", Target: &v1alpha1.ExtensionVersion{Version: "0.3.0"}, Hop: "0.2.0 first"},
			"chose x 0.2.0 for Kubernetes v1.31.2 (kept the installed version: spec.upgrade does not allow moving it), channel stable; on the way to 0.3.0: 0.2.0 first"},
	} {
		if got := ChoiceMessage("x", "v1.31.2", tc.sel); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
