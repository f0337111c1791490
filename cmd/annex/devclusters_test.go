package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseDevClusters(t *testing.T) {
	// A bin root with the hub's version and an older one that runs
	// workloads, and a newer one that lacks binaries.
	root := t.TempDir()
	for _, v := range []string{"1.37.1", "1.36.4", "1.38.0"} {
		if err := os.MkdirAll(filepath.Join(root, v), 0o755); err != nil {
			t.Fatal(err)
		}
		if v == "1.38.0" {
			continue
		}
		for _, bin := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"} {
			if err := os.WriteFile(filepath.Join(root, v, bin), []byte("x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		flag    string
		want    []devCluster
		wantErr string
	}{
		// No flag: no managed clusters.
		{"", nil, ""},
		// A number alternates between the hub's version and the newest
		// other one that is built (1.38.0 lacks binaries).
		{"3", []devCluster{{"cluster-1", "1.37.1"}, {"cluster-2", "1.36.4"}, {"cluster-3", "1.37.1"}}, ""},
		// Names and versions.
		{"edge=1.36.4, core=v1.37.1", []devCluster{{"edge", "1.36.4"}, {"core", "1.37.1"}}, ""},
		// Mistakes say what is expected.
		{"edge", nil, "want a number, or name=version pairs"},
		{"edge=1.36", nil, "want a number, or name=version pairs"},
		{"a=1.36.4,a=1.37.1", nil, "the name a appears twice"},
		{"11", nil, "between 0 and 10"},
	} {
		got, err := parseDevClusters(tc.flag, "1.37.1", root)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("--clusters %q: err %v, want %q", tc.flag, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--clusters %q = %v (%v), want %v", tc.flag, got, err, tc.want)
		}
	}
}
