package version

import "testing"

func TestInfoString(t *testing.T) {
	tests := []struct {
		info Info
		want string
	}{
		// A release build with VCS information.
		{Info{Version: "0.1.0", Commit: "abc123-dirty", GoVersion: "go1.26.8", Platform: "linux/amd64"}, "0.1.0 (commit abc123-dirty, go1.26.8, linux/amd64)"},
		// go test and -buildvcs=false builds have no commit.
		{Info{Version: "dev", GoVersion: "go1.26.8", Platform: "linux/arm64"}, "dev (go1.26.8, linux/arm64)"},
	}
	for _, tt := range tests {
		if got := tt.info.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.info, got, tt.want)
		}
	}
}

func TestGetReportsVersion(t *testing.T) {
	defer func(v string) { Version = v }(Version)
	Version = "1.2.3"
	if got := Get(); got.Version != "1.2.3" || got.GoVersion == "" || got.Platform == "" {
		t.Errorf("Get() = %+v, want version 1.2.3 with Go version and platform", got)
	}
}
