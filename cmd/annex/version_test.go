package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildVersion builds annex the way `make build` does, with the
// version set at link time, and checks that `annex version` prints it and
// that the manager logs it before anything else (here the manager then
// stops: its kubeconfig does not exist).
func TestBuildVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "annex")
	build := exec.Command("go", "build", "-ldflags", "-X github.com/annex-platform/annex/internal/version.Version=9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "annex 9.8.7-test (") {
		t.Errorf("annex version: %v\n%s\nwant a line starting with %q", err, out, "annex 9.8.7-test (")
	}

	manager := exec.Command(bin, "manager", "--log-development=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	home := t.TempDir()
	manager.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(home, "missing"), "HOME="+home, "KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT=")
	out, err = manager.CombinedOutput()
	if err == nil {
		t.Fatalf("annex manager without a kubeconfig succeeded:\n%s", out)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	if !strings.Contains(first, `"msg":"starting Annex"`) || !strings.Contains(first, `"version":"9.8.7-test"`) {
		t.Errorf("the manager's first log line is %q, want the JSON line starting Annex with version 9.8.7-test", first)
	}
}
