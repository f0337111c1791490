package v1alpha1

import (
	"os"
	"regexp"
	"testing"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// TestGeneratedPatternsMatchConstants keeps the patterns controller-gen wrote
// into the CRDs (from the markers) equal to the Go constants other packages
// validate with.
func TestGeneratedPatternsMatchConstants(t *testing.T) {
	spec := func(file string) map[string]any {
		data, err := os.ReadFile("../../config/crd/bases/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatal(err)
		}
		return dig(t, crd, "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec", "properties").(map[string]any)
	}
	inst := spec("annex.dev_extensioninstallations.yaml")
	ext := spec("annex.dev_extensions.yaml")
	versionItem := dig(t, ext, "versions", "items", "properties").(map[string]any)
	checks := []struct {
		name, got, want string
	}{
		{"ExtensionInstallation spec.version", dig(t, inst, "version", "pattern").(string), VersionRangePattern},
		{"Extension versions[].kubeVersion", dig(t, versionItem, "kubeVersion", "pattern").(string), VersionRangePattern},
		{"Extension versions[].dependencies[].version", dig(t, versionItem, "dependencies", "items", "properties", "version", "pattern").(string), VersionRangePattern},
		{"Extension versions[].version", dig(t, versionItem, "version", "pattern").(string), VersionPattern},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: the CRD pattern differs from the constant; run `make generate` and keep the marker equal to the constant", c.name)
		}
	}
}

// TestVersionRangePattern checks that the API accepts the ranges Helm users
// write and refuses what Masterminds semver cannot parse.
func TestVersionRangePattern(t *testing.T) {
	re := regexp.MustCompile(VersionRangePattern)
	accepted := []string{"*", "1.x", "^1.4", "~1.2.3", ">=1.2 <2", ">=1.2, <2", "1.2 - 1.4", "^2.1 || ~3.0", ">=1.28.0-0", "v1.2.3", "=1.0.0", "!=1.0.0", "~>1.2", "1.2.3-rc.1+build.5", "X", "1.*"}
	refused := []string{"", ">=1.2 <", "abc", "1.2.3.4", "^1X000", ">>1", "1.2 -", "|| 1.0", "latest"}
	for _, s := range accepted {
		if !re.MatchString(s) {
			t.Errorf("%q should be accepted", s)
		}
		if _, err := semver.NewConstraint(s); err != nil {
			t.Errorf("%q is accepted by the pattern but Masterminds refuses it: %v", s, err)
		}
	}
	for _, s := range refused {
		if re.MatchString(s) {
			t.Errorf("%q should be refused", s)
		}
	}
}

func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch key := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %q: not a map", key)
			}
			v = m[key]
		case int:
			l, ok := v.([]any)
			if !ok || len(l) <= key {
				t.Fatalf("at [%d]: not a list", key)
			}
			v = l[key]
		}
	}
	return v
}
