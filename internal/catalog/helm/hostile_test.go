package helm_test

import (
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/catalog/helm"
)

// TestParseHelmIndexRefusesHostileIndexes has one case per class of index
// attack in Helm's CVE history: the index as a whole, or the entry at
// fault, is refused with a clear reason and nothing panics.
func TestParseHelmIndexRefusesHostileIndexes(t *testing.T) {
	const ok = "  good:\n  - name: good\n    version: 1.0.0\n    urls: [good-1.0.0.tgz]\n"
	laughs := "apiVersion: v1\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i, prev := 0, "a"; i < 9; i++ {
		cur := string(rune('b' + i))
		laughs += cur + ": &" + cur + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
		prev = cur
	}
	laughs += "entries:\n  bomb:\n  - name: bomb\n    version: 1.0.0\n    keywords: *j\n    urls: [x.tgz]\n" + ok
	tests := []struct {
		name  string
		index string
		// wantErr is the error of the whole index, or "" when only the
		// entry is skipped with wantSkipped.
		wantErr, wantSkipped string
	}{
		// CVE-2019-11253: a billion-laughs alias bomb.
		{"alias bomb", laughs, "", `entry "bomb" #1: line 10: cannot unmarshal !!seq into string`},
		// CVE-2022-23525: a null entry crashed Helm's loader.
		{"null entry", "apiVersion: v1\nentries:\n  bad:\n  - null\n" + ok, "", `entry "bad" #1: must be a mapping of chart fields`},
		// CVE-2024-26147: entries of the wrong shape.
		{"entry not a list", "apiVersion: v1\nentries:\n  bad: 5\n" + ok, "", `entry "bad": must be a list of chart versions`},
		{"entries not a map", "apiVersion: v1\nentries: 5\n", "not a Helm repository index", ""},
		// CVE-2025-55198: metadata of the wrong types.
		{"version of wrong type", "apiVersion: v1\nentries:\n  bad:\n  - name: bad\n    version: [1]\n    urls: [x.tgz]\n" + ok, "", `entry "bad" #1: line 5: cannot unmarshal !!seq into string`},
		{"no apiVersion", "entries:\n" + ok, "has no apiVersion", ""},
		// CVE-2020-15185: the same version twice, the second one malicious.
		{"duplicate entry", "apiVersion: v1\nentries:\n  dup:\n  - name: dup\n    version: 1.0.0\n    urls: [good.tgz]\n  - name: dup\n    version: 1.0.0\n    urls: [https://evil.example/x.tgz]\n", "", `entry "dup" 1.0.0: duplicate version; the first entry is kept`},
		// CVE-2021-21303: terminal escapes in a URL (refused) ...
		{"escape in url", "apiVersion: v1\nentries:\n  esc:\n  - name: esc\n    version: 1.0.0\n    urls: [\"x\\e[2J.tgz\"]\n" + ok, "", "contains control characters"},
		// ... and in a name (not a valid object name).
		{"escape in name", "apiVersion: v1\nentries:\n  \"e\\esc\":\n  - name: \"e\\esc\"\n    version: 1.0.0\n    urls: [x.tgz]\n" + ok, "", "name is not a valid Kubernetes object name"},
		// CVE-2024-25620: a chart name that is a path.
		{"path as chart name", "apiVersion: v1\nentries:\n  ../evil:\n  - name: ../evil\n    version: 1.0.0\n    urls: [x.tgz]\n" + ok, "", "name is not a valid Kubernetes object name"},
		// Control characters in the raw YAML are refused by the YAML parser.
		{"raw control character", "apiVersion: v1\nentries:\n  a:\n  - name: a\x07\n", "control characters are not allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index, err := helm.ParseIndex([]byte(tt.index), "https://charts.example.com", "hostile")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseIndex() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseIndex() error = %v", err)
			}
			if !strings.Contains(strings.Join(index.Skipped, "\n"), tt.wantSkipped) {
				t.Fatalf("Skipped = %q, want a line containing %q", index.Skipped, tt.wantSkipped)
			}
			if len(index.Packages) == 0 || index.Packages[len(index.Packages)-1].Name != "good" && index.Packages[0].Name != "dup" {
				t.Fatalf("the good entries did not survive: %+v", index.Packages)
			}
		})
	}

	// Escapes in fields people read are removed, not refused.
	index, err := helm.ParseIndex([]byte("apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n    description: \"red \\e[31mtext\\u202e\"\n    urls: [a.tgz]\n"), "https://x.example", "c")
	if err != nil || len(index.Packages) != 1 || index.Packages[0].Spec.Description != "red [31mtext" {
		t.Fatalf("description = %q, %v; want the escapes removed", index.Packages[0].Spec.Description, err)
	}
}
