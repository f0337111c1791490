package resolve

import (
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Explanation says why no version can be chosen, in words a person can act
// on. It is returned as an error; Reason is a condition reason.
type Explanation struct {
	Reason  string
	Message string
	// Installations names, for a Solve, the installations whose
	// requirements the explanation rests on (the failed one included),
	// sorted.
	Installations []string
}

func (e *Explanation) Error() string { return e.Message }

// ParseClusterVersion reads a Kubernetes version as reported by discovery
// ("v1.33.4-gke.100", "v1.31.2+k3s1") and returns its release part
// (1.33.4): vendor suffixes are pre-release or build tags by syntax only, and
// a chart's kubeVersion range means the upstream release.
func ParseClusterVersion(s string) (*semver.Version, error) {
	v, err := semver.NewVersion(strings.TrimSpace(s))
	if err != nil {
		return nil, err
	}
	release := semver.New(v.Major(), v.Minor(), v.Patch(), "", "")
	return release, nil
}

// KubeVersionAllows reports whether a kubeVersion range admits the cluster's
// release version. An empty range admits every version. A range that does
// not parse admits nothing (the catalog refuses such entries earlier).
// Helm's convention ">=1.28.0-0" (a pre-release floor) behaves like ">=1.28.0".
func KubeVersionAllows(kubeVersion string, cluster *semver.Version) bool {
	if strings.TrimSpace(kubeVersion) == "" {
		return true
	}
	c, err := semver.NewConstraint(kubeVersion)
	if err != nil {
		return false
	}
	return c.Check(cluster)
}
