package resolve

import (
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ev builds a catalog version: ev("1.2.0", ">=1.28", "cert-manager >=1.15", "crd").
func ev(version, kube string, deps ...string) v1alpha1.ExtensionVersion {
	v := v1alpha1.ExtensionVersion{Version: version, KubeVersion: kube,
		Source: v1alpha1.ArtifactSource{URL: "builtin://" + version}}
	for _, d := range deps {
		name, rng, _ := strings.Cut(d, " ")
		v.Dependencies = append(v.Dependencies, v1alpha1.Dependency{Name: name, Version: rng})
	}
	return v
}

// deprecated marks a version deprecated.
func deprecated(v v1alpha1.ExtensionVersion) v1alpha1.ExtensionVersion {
	v.Deprecated = true
	return v
}

// want is an installation that is not installed yet.
func want(name, ext, rng string) Installation {
	return Installation{Name: name, Extension: ext, Range: rng}
}

// pinned is an installed version with automatic upgrades off.
func pinned(name, ext, rng, installed string) Installation {
	return Installation{Name: name, Extension: ext, Range: rng, Installed: installed}
}

// auto is an installed version that may move up (and down if down is true).
func auto(name, ext, rng, installed string, down bool) Installation {
	return Installation{Name: name, Extension: ext, Range: rng, Installed: installed, Automatic: true, AllowDowngrade: down}
}
