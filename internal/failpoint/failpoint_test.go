package failpoint

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want spec
	}{
		// Unset arms nothing.
		{"", spec{}},
		// A point alone fires on its first hit, for any installation.
		{"apply/after-intent", spec{point: "apply/after-intent", nth: 1}},
		// An installation and a count.
		{"apply/after-intent@ns/app#3", spec{point: "apply/after-intent", key: "ns/app", nth: 3}},
		// A count that is not a positive number arms nothing.
		{"apply/after-intent#0", spec{}},
		{"apply/after-intent#x", spec{}},
	} {
		if got := parse(tc.in); got != tc.want {
			t.Errorf("parse(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		namespace, name, want string
	}{
		// A namespaced object.
		{"ns", "app", "ANNEX_FAILPOINT=apply/after-event@ns/app#2"},
		// A cluster-scoped object (a profile) is keyed by its name alone.
		{"", "fleet", "ANNEX_FAILPOINT=apply/after-event@fleet#2"},
		// No name: any object.
		{"", "", "ANNEX_FAILPOINT=apply/after-event#2"},
	} {
		if got := Env(AfterEvent, tc.namespace, tc.name, 2); got != tc.want {
			t.Errorf("Env(%q, %q) = %q, want %q", tc.namespace, tc.name, got, tc.want)
		}
	}
}

// TestHitKills runs this test binary again with a point armed for its
// second hit on one installation: hits elsewhere and the first hit pass,
// the second kills the process with SIGKILL.
func TestHitKills(t *testing.T) {
	if os.Getenv("FAILPOINT_CHILD") == "1" {
		Hit(AfterIntent, "ns/other")
		Hit(AfterObjects, "ns/app")
		Hit(AfterIntent, "ns/app")
		os.Stdout.WriteString("survived the first hit\n")
		Hit(AfterIntent, "ns/app")
		os.Stdout.WriteString("survived the second hit\n")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHitKills$")
	cmd.Env = append(os.Environ(), "FAILPOINT_CHILD=1", Env(AfterIntent, "ns", "app", 2))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the child was not killed: err=%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "survived the first hit") || strings.Contains(string(out), "survived the second hit") {
		t.Fatalf("killed at the wrong hit:\n%s", out)
	}
	if !strings.Contains(string(out), "failpoint apply/after-intent fired (ns/app)") {
		t.Fatalf("no notice before the kill:\n%s", out)
	}
}
