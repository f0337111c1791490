package resolve

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Present is an extension already installed on a cluster, as far as the
// dependency check cares.
type Present struct {
	// Installation is "namespace/name" of the ExtensionInstallation.
	Installation string
	// Version is its installed version; Ready whether it is healthy.
	Version string
	Ready   bool
}

// UnmetDependencies returns, for each dependency of v that no Ready
// installation on the cluster satisfies, a sentence saying what is missing
// and what to do. present maps an extension name to its installations on the
// same cluster. The result is sorted and empty when everything is met.
func UnmetDependencies(ext string, v v1alpha1.ExtensionVersion, present map[string][]Present) []string {
	var unmet []string
	for _, dep := range v.Dependencies {
		rangeText := dep.Version
		if strings.TrimSpace(rangeText) == "" {
			rangeText = "*"
		}
		want, err := semver.NewConstraint(rangeText)
		if err != nil {
			unmet = append(unmet, fmt.Sprintf("%s %s declares dependency %s with invalid range %q; fix the extension's catalog entry",
				ext, v.Version, dep.Name, dep.Version))
			continue
		}
		unmet = append(unmet, checkOne(ext, v.Version, dep.Name, rangeText, want, present[dep.Name])...)
	}
	sort.Strings(unmet)
	return unmet
}

func checkOne(ext, version, dep, rangeText string, want *semver.Constraints, installs []Present) []string {
	if len(installs) == 0 {
		return []string{fmt.Sprintf("%s %s needs %s %s, which is not installed on this cluster; create an ExtensionInstallation for %s",
			ext, version, dep, rangeText, dep)}
	}
	var notes []string
	for _, p := range installs {
		pv, err := semver.NewVersion(p.Version)
		switch {
		case p.Version == "" || err != nil:
			notes = append(notes, fmt.Sprintf("%s is not installed yet", p.Installation))
		case !want.Check(pv):
			notes = append(notes, fmt.Sprintf("%s runs %s", p.Installation, p.Version))
		case !p.Ready:
			notes = append(notes, fmt.Sprintf("%s (%s) is not Ready yet", p.Installation, p.Version))
		default:
			return nil // one Ready installation in range is enough
		}
	}
	return []string{fmt.Sprintf("%s %s needs %s %s: %s", ext, version, dep, rangeText, strings.Join(notes, "; "))}
}
