package catalog_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/catalog"
)

// tarEntry is one entry of a hand-made archive; hostile archives need
// headers catalog.ChartArchive refuses to write.
type tarEntry struct {
	hdr  tar.Header
	body []byte
}

func file(name, body string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}, body: []byte(body)}
}

func zeros(name string, n int) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(n)}, body: make([]byte, n)}
}

func tgz(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := tw.WriteHeader(&e.hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const chartYAML = "apiVersion: v2\nname: demo\nversion: 1.0.0\n"

// TestCheckArchiveRefusesHostileArchives has one case per class of archive
// attack in Helm's CVE history; each must be refused with a message that
// names the entry and the rule, without a panic and within small limits.
func TestCheckArchiveRefusesHostileArchives(t *testing.T) {
	small := catalog.Limits{MaxArchiveBytes: 1 << 20, MaxExpandedBytes: 1 << 20, MaxFileBytes: 256 << 10, MaxFiles: 50}
	many := []tarEntry{file("demo/Chart.yaml", chartYAML)}
	for i := range 60 {
		many = append(many, file("demo/templates/"+strings.Repeat("x", i+1)+".yaml", "a: b\n"))
	}
	bomb := []tarEntry{file("demo/Chart.yaml", chartYAML)}
	for i := range 8 {
		bomb = append(bomb, zeros("demo/files/zero"+string(rune('a'+i)), 200<<10))
	}
	tests := []struct {
		name    string
		archive []byte
		want    string
	}{
		// CVE-2019-1000008: an entry climbing out of the chart folder.
		{"path traversal", tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/../../etc/cron.d/x", "x")), `entry "demo/../../etc/cron.d/x": contains ".."`},
		// CVE-2024-25620: absolute paths.
		{"absolute path", tgz(t, file("/etc/passwd", "x")), `entry "/etc/passwd": is an absolute path`},
		// CVE-2026-35206: paths that are absolute or parent-relative on Windows.
		{"backslash path", tgz(t, file(`demo\..\..\x`, "x")), "contains a backslash"},
		{"drive letter", tgz(t, file(`C:/Windows/x`, "x")), "starts with a drive letter"},
		// CVE-2019-18658: a symbolic link pointing outside the chart.
		{"symlink", tgz(t, file("demo/Chart.yaml", chartYAML), tarEntry{hdr: tar.Header{Name: "demo/values.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}}), `entry "demo/values.yaml": is a symbolic link (to "/etc/shadow")`},
		// CVE-2025-53547: a hard link standing for another file.
		{"hard link", tgz(t, file("demo/Chart.yaml", chartYAML), tarEntry{hdr: tar.Header{Name: "demo/values.yaml", Typeflag: tar.TypeLink, Linkname: "demo/Chart.yaml"}}), "is a hard link"},
		// Devices and FIFOs are not chart files either.
		{"device", tgz(t, file("demo/Chart.yaml", chartYAML), tarEntry{hdr: tar.Header{Name: "demo/dev", Typeflag: tar.TypeChar}}), "a device, FIFO or other special file"},
		// CVE-2025-32386: a small archive expanding past the limit.
		{"decompression bomb", tgz(t, bomb...), "expands to more than 1048576 bytes"},
		// One huge file.
		{"file too large", tgz(t, file("demo/Chart.yaml", chartYAML), zeros("demo/big", 300<<10)), "more than the limit of 262144 bytes per file"},
		// Too many entries to hold in memory cheaply.
		{"too many files", tgz(t, many...), "more than 50 entries"},
		// Two copies of one path: which one Helm keeps is an accident.
		{"duplicate entry", tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/values.yaml", "a: 1\n"), file("demo/values.yaml", "a: 2\n")), "appears twice"},
		// Two charts in one archive, or files beside the chart folder.
		{"outside chart folder", tgz(t, file("demo/Chart.yaml", chartYAML), file("other/Chart.yaml", chartYAML)), `is outside the chart folder "demo"`},
		// CVE-2021-21303: terminal escapes in names shown to people.
		{"control characters in name", tgz(t, file("demo/\x1b[2Jx.yaml", "x")), "contains control characters"},
		// Compressed size above the download limit.
		{"archive too large", append(tgz(t, file("demo/Chart.yaml", chartYAML)), make([]byte, 1<<20)...), "more than the limit of 1048576 bytes"},
		// Not an archive at all.
		{"not gzip", []byte("<html>login</html>"), "is not gzip-compressed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := catalog.CheckArchive(tt.archive, small)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckArchive() = %v, want an error containing %q", err, tt.want)
			}
		})
	}

	// The defaults hold a real chart.
	if err := catalog.CheckArchive(tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/templates/cm.yaml", "a: b\n")), catalog.Limits{}); err != nil {
		t.Fatalf("a plain chart is refused: %v", err)
	}
	var unsafe *catalog.UnsafeArchiveError
	if err := catalog.CheckArchive(tgz(t, file("/abs", "x")), catalog.Limits{}); !errors.As(err, &unsafe) {
		t.Fatalf("error = %v, want an *UnsafeArchiveError", err)
	}
}

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
			index, err := catalog.ParseHelmIndex([]byte(tt.index), "https://charts.example.com", "hostile")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseHelmIndex() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseHelmIndex() error = %v", err)
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
	index, err := catalog.ParseHelmIndex([]byte("apiVersion: v1\nentries:\n  a:\n  - name: a\n    version: 1.0.0\n    description: \"red \\e[31mtext\\u202e\"\n    urls: [a.tgz]\n"), "https://x.example", "c")
	if err != nil || len(index.Packages) != 1 || index.Packages[0].Spec.Description != "red [31mtext" {
		t.Fatalf("description = %q, %v; want the escapes removed", index.Packages[0].Spec.Description, err)
	}
}

// FuzzCheckArchive feeds arbitrary bytes to the archive walker: it may
// refuse them, but never panic or accept an archive Helm's loader would
// extract outside the chart folder. Run it longer with
//
//	go test ./internal/catalog -run '^$' -fuzz FuzzCheckArchive -fuzztime 10m
func FuzzCheckArchive(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzCheckArchive.
	f.Add(tgz(f, file("demo/Chart.yaml", chartYAML)))
	f.Add(tgz(f, file("demo/../x", "x")))
	f.Add(tgz(f, tarEntry{hdr: tar.Header{Name: "demo/l", Typeflag: tar.TypeSymlink, Linkname: "/"}}))
	f.Add(tgz(f, file("./operator.yaml", "name: p\n"), file("templates/a.yaml", "a: b\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := catalog.Limits{MaxExpandedBytes: 4 << 20, MaxFileBytes: 1 << 20, MaxFiles: 100}
		if catalog.CheckArchive(data, lim) != nil {
			return
		}
		// Accepted: every entry must be a regular file or folder with a
		// relative name that stays inside the archive's root (one chart
		// folder, or a package at the root).
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("accepted an archive that is not gzip: %v", err)
		}
		tr := tar.NewReader(zr)
		for {
			hdr, err := tr.Next()
			if err != nil {
				return
			}
			if strings.Contains(hdr.Name, "..") && strings.Contains("/"+hdr.Name+"/", "/../") || strings.HasPrefix(hdr.Name, "/") {
				t.Fatalf("accepted entry %q", hdr.Name)
			}
			if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeDir {
				t.Fatalf("accepted entry %q of type %q", hdr.Name, hdr.Typeflag)
			}
		}
	})
}
