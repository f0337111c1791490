// Package version is the build version of Annex, the one `annex manager`
// logs at start and `annexctl version` prints.
//
// Version is set at link time:
//
//	go build -ldflags "-X github.com/annex-platform/annex/internal/version.Version=$(VERSION)" ./cmd/annex
//
// `make build` and `make image` pass the Makefile's VERSION (git describe
// of the work tree, without a leading "v"). A plain `go build` or `go test`
// leaves it "dev".
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the version this binary was built as; "dev" when the build
// set none.
var Version = "dev"

// Info describes the running binary.
type Info struct {
	// Version is Version.
	Version string `json:"version"`
	// Commit is the VCS revision the Go toolchain stamped into the binary
	// (vcs.revision), with "-dirty" when the work tree had changes; empty
	// when the build had no VCS information (go test, -buildvcs=false).
	Commit string `json:"commit,omitempty"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH of the binary.
	Platform string `json:"platform"`
}

// Get returns the Info of the running binary.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if info.Commit != "" && dirty {
		info.Commit += "-dirty"
	}
	return info
}

// String is the one line a person reads, e.g.
// "0.1.0 (commit 2fb913b…, go1.26.8, linux/amd64)".
func (i Info) String() string {
	s := i.Version
	if i.Commit != "" {
		s += " (commit " + i.Commit + ", " + i.GoVersion + ", " + i.Platform + ")"
	} else {
		s += " (" + i.GoVersion + ", " + i.Platform + ")"
	}
	return s
}
