package resolve

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Request is one installation to resolve.
type Request struct {
	// Extension is the extension's name; Versions its versions, nil when no
	// catalog offers it (Found false).
	Extension string
	Found     bool
	Versions  []v1alpha1.ExtensionVersion

	// Range is the installation's spec.version ("" means any).
	Range string
	// ClusterVersion is the Kubernetes version the cluster reports, such as
	// "v1.33.4-gke.100" or "v1.31.2+k3s1".
	ClusterVersion string

	// Installed is the version currently installed, "" if none.
	Installed string
	// Automatic lets the installed version move up within Range.
	Automatic bool
	// AllowDowngrade lets the installed version move down.
	AllowDowngrade bool
}

// Choice is the version to install.
type Choice struct {
	Version v1alpha1.ExtensionVersion
	// Kept is true when the installed version was kept although another
	// version would also fit (automatic upgrades off, or no downgrade).
	Kept bool
}

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

// Resolver picks the highest version of one extension that satisfies the
// installation's range and the cluster's Kubernetes version, preferring
// non-deprecated versions and respecting the upgrade policy. Dependencies are
// not solved here: the caller checks them against the cluster's
// installations.
type Resolver struct{}

// Resolve returns the version to install or an *Explanation. Other errors
// do not occur: every input problem is explained.
func (Resolver) Resolve(req Request) (Choice, error) {
	if !req.Found {
		return Choice{}, &Explanation{
			Reason: v1alpha1.ReasonExtensionNotFound,
			Message: fmt.Sprintf("spec.extension: no catalog offers an extension named %q; "+
				"check the name with `kubectl get extensions`, or add a Catalog that provides it", req.Extension),
		}
	}
	rangeText := strings.TrimSpace(req.Range)
	if rangeText == "" {
		rangeText = "*"
	}
	want, err := semver.NewConstraint(rangeText)
	if err != nil {
		return Choice{}, &Explanation{
			Reason:  v1alpha1.ReasonNoMatchingVersion,
			Message: fmt.Sprintf("spec.version: %q is not a version range (%v); use e.g. \"^1.4\", \">=1.2 <2\" or \"*\"", req.Range, err),
		}
	}
	cluster, err := ParseClusterVersion(req.ClusterVersion)
	if err != nil {
		return Choice{}, &Explanation{
			Reason:  v1alpha1.ReasonClusterUnavailable,
			Message: fmt.Sprintf("the cluster reports Kubernetes version %q, which is not a semantic version", req.ClusterVersion),
		}
	}

	versions := sortedVersions(req.Versions)
	var inRange, fits []candidate
	var tooNew []candidate // in range, but the cluster is outside their kubeVersion
	for _, c := range versions {
		if !want.Check(c.semver) {
			continue
		}
		inRange = append(inRange, c)
		if KubeVersionAllows(c.spec.KubeVersion, cluster) {
			fits = append(fits, c)
		} else {
			tooNew = append(tooNew, c)
		}
	}
	if len(inRange) == 0 {
		return Choice{}, &Explanation{
			Reason: v1alpha1.ReasonNoMatchingVersion,
			Message: fmt.Sprintf("spec.version: no version of %s satisfies %q (available: %s); change spec.version",
				req.Extension, rangeText, listVersions(versions, 5)),
		}
	}
	if len(fits) == 0 {
		return Choice{}, &Explanation{
			Reason:  v1alpha1.ReasonNoMatchingVersion,
			Message: kubeMismatchMessage(req.Extension, rangeText, cluster, tooNew),
		}
	}

	best := pickBest(fits)
	installed, hasInstalled := findInstalled(fits, req.Installed)
	switch {
	case !hasInstalled:
		return Choice{Version: best.spec}, nil
	case !req.Automatic:
		return Choice{Version: installed.spec, Kept: best.spec.Version != installed.spec.Version}, nil
	case best.semver.LessThan(installed.semver) && !req.AllowDowngrade:
		return Choice{Version: installed.spec, Kept: true}, nil
	default:
		return Choice{Version: best.spec}, nil
	}
}

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

type candidate struct {
	semver *semver.Version
	spec   v1alpha1.ExtensionVersion
}

// sortedVersions returns the parseable versions, highest first. Versions
// that do not parse are ignored (the API server refuses them).
func sortedVersions(in []v1alpha1.ExtensionVersion) []candidate {
	out := make([]candidate, 0, len(in))
	for _, v := range in {
		sv, err := semver.NewVersion(v.Version)
		if err != nil {
			continue
		}
		out = append(out, candidate{semver: sv, spec: v})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[j].semver.LessThan(out[i].semver) })
	return out
}

// pickBest returns the highest non-deprecated candidate, or the highest
// deprecated one when nothing else fits. cs is sorted highest first.
func pickBest(cs []candidate) candidate {
	for _, c := range cs {
		if !c.spec.Deprecated {
			return c
		}
	}
	return cs[0]
}

func findInstalled(cs []candidate, installed string) (candidate, bool) {
	if installed == "" {
		return candidate{}, false
	}
	iv, err := semver.NewVersion(installed)
	if err != nil {
		return candidate{}, false
	}
	for _, c := range cs {
		if c.semver.Equal(iv) {
			return c, true
		}
	}
	return candidate{}, false
}

func kubeMismatchMessage(ext, rangeText string, cluster *semver.Version, tooNew []candidate) string {
	newest := tooNew[0]
	return fmt.Sprintf("no version of %s within %q supports the cluster's Kubernetes %s: %s %s needs Kubernetes %q%s. "+
		"Upgrade the cluster, or change spec.version to a range with a version that supports %s",
		ext, rangeText, cluster, ext, newest.spec.Version, newest.spec.KubeVersion, othersNote(tooNew), cluster)
}

func othersNote(tooNew []candidate) string {
	if len(tooNew) == 1 {
		return ""
	}
	return fmt.Sprintf(" (and %d more in range likewise)", len(tooNew)-1)
}

func listVersions(cs []candidate, max int) string {
	if len(cs) == 0 {
		return "none"
	}
	var names []string
	for i, c := range cs {
		if i == max {
			names = append(names, fmt.Sprintf("… %d more", len(cs)-max))
			break
		}
		names = append(names, c.spec.Version)
	}
	return strings.Join(names, ", ")
}
