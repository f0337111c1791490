package resolve

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// BaseError is why a package's base cannot be chosen, for the user.
type BaseError struct {
	// Wait: a catalog may offer it later; otherwise the range is wrong.
	Wait            bool
	Reason, Message string
}

func (e *BaseError) Error() string { return e.Message }

// Base picks the highest version of extension name whose version, or
// failing that appVersion, is in versionRange (KEP-0012's own example
// names the base's appVersion): the base a package extends. A
// *BaseError says why there is none.
func Base(extensions []v1alpha1.Extension, name, versionRange string) (*v1alpha1.ExtensionVersion, *BaseError) {
	constraint, err := semver.NewConstraint(cmp.Or(versionRange, "*"))
	if err != nil {
		return nil, &BaseError{Reason: v1alpha1.ReasonArtifactFailed, Message: fmt.Sprintf("extends: version %q of %s is not a version range: %v", versionRange, name, err)}
	}
	matches := func(v string) bool {
		sv, err := semver.NewVersion(v)
		return err == nil && constraint.Check(sv)
	}
	for i := range extensions {
		if extensions[i].Name != name {
			continue
		}
		versions := extensions[i].Spec.Versions // highest first
		for j := range versions {
			if matches(versions[j].Version) {
				return &versions[j], nil
			}
		}
		for j := range versions {
			if versions[j].AppVersion != "" && matches(versions[j].AppVersion) {
				return &versions[j], nil
			}
		}
		return nil, &BaseError{Wait: true, Reason: v1alpha1.ReasonBaseNotFound, Message: fmt.Sprintf(
			"extends: no version of %s matches %q (by version or appVersion); the catalogs offer %s", name, versionRange, versionList(versions))}
	}
	return nil, &BaseError{Wait: true, Reason: v1alpha1.ReasonBaseNotFound, Message: fmt.Sprintf(
		"extends: base package %s is in no catalog; add a Catalog that serves it", name)}
}

func versionList(versions []v1alpha1.ExtensionVersion) string {
	out := make([]string, 0, len(versions))
	for _, v := range versions {
		out = append(out, v.Version)
	}
	return strings.Join(out, ", ")
}
