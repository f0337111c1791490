package archive_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/archive"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
)

// Shorthands for the archive builders of package catalogtest.
type tarEntry = catalogtest.TarEntry

var (
	file  = catalogtest.File
	zeros = catalogtest.Zeros
	tgz   = catalogtest.TGZ
)

const chartYAML = catalogtest.ChartYAML

// TestCheckArchiveRefusesHostileArchives has one case per class of archive
// attack in Helm's CVE history; each must be refused with a message that
// names the entry and the rule, without a panic and within small limits.
func TestCheckArchiveRefusesHostileArchives(t *testing.T) {
	small := archive.Limits{MaxArchiveBytes: 1 << 20, MaxExpandedBytes: 1 << 20, MaxFileBytes: 256 << 10, MaxFiles: 50}
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
		{"symlink", tgz(t, file("demo/Chart.yaml", chartYAML), tarEntry{Hdr: tar.Header{Name: "demo/values.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}}), `entry "demo/values.yaml": is a symbolic link (to "/etc/shadow")`},
		// CVE-2025-53547: a hard link standing for another file.
		{"hard link", tgz(t, file("demo/Chart.yaml", chartYAML), tarEntry{Hdr: tar.Header{Name: "demo/values.yaml", Typeflag: tar.TypeLink, Linkname: "demo/Chart.yaml"}}), "is a hard link"},
		// Devices and FIFOs are not chart files either.
		{"device", tgz(t, file("demo/Chart.yaml", chartYAML), tarEntry{Hdr: tar.Header{Name: "demo/dev", Typeflag: tar.TypeChar}}), "a device, FIFO or other special file"},
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
			err := archive.CheckArchive(tt.archive, small)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CheckArchive() = %v, want an error containing %q", err, tt.want)
			}
		})
	}

	// The defaults hold a real chart.
	if err := archive.CheckArchive(tgz(t, file("demo/Chart.yaml", chartYAML), file("demo/templates/cm.yaml", "a: b\n")), archive.Limits{}); err != nil {
		t.Fatalf("a plain chart is refused: %v", err)
	}
	var unsafe *archive.UnsafeArchiveError
	if err := archive.CheckArchive(tgz(t, file("/abs", "x")), archive.Limits{}); !errors.As(err, &unsafe) {
		t.Fatalf("error = %v, want an *UnsafeArchiveError", err)
	}
}

// FuzzCheckArchive feeds arbitrary bytes to the archive walker: it may
// refuse them, but never panic or accept an archive Helm's loader would
// extract outside the chart folder. Run it longer with
//
//	go test ./internal/archive -run '^$' -fuzz FuzzCheckArchive -fuzztime 10m
func FuzzCheckArchive(f *testing.F) {
	// More seeds live in testdata/fuzz/FuzzCheckArchive.
	f.Add(tgz(f, file("demo/Chart.yaml", chartYAML)))
	f.Add(tgz(f, file("demo/../x", "x")))
	f.Add(tgz(f, tarEntry{Hdr: tar.Header{Name: "demo/l", Typeflag: tar.TypeSymlink, Linkname: "/"}}))
	f.Add(tgz(f, file("./operator.yaml", "name: p\n"), file("templates/a.yaml", "a: b\n")))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := archive.Limits{MaxExpandedBytes: 4 << 20, MaxFileBytes: 1 << 20, MaxFiles: 100}
		if archive.CheckArchive(data, lim) != nil {
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

// TestCheckBundleArchive checks the layouts CheckBundleArchive accepts
// besides one top folder, and that they open no door.
func TestCheckBundleArchive(t *testing.T) {
	tests := []struct {
		name    string
		archive []byte
		want    string // "" means accepted
	}{
		// manifests/ and metadata/ at the root.
		{"folders at the root", tgz(t, file("manifests/csv.yaml", "a: b\n"), file("metadata/annotations.yaml", "a: b\n")), ""},
		// The same, written by `tar -C bundle .`.
		{"./ names", tgz(t, file("./manifests/csv.yaml", "a: b\n"), file("./metadata/annotations.yaml", "a: b\n")), ""},
		// The bundle in one top folder, as a chart is packed.
		{"one top folder", tgz(t, file("demo/manifests/csv.yaml", "a: b\n"), file("demo/metadata/annotations.yaml", "a: b\n")), ""},
		// A file at the root beside the folders.
		{"file beside", tgz(t, file("manifests/csv.yaml", "a: b\n"), file("README.md", "x")), `entry "README.md": is outside the chart folder "manifests"`},
		// operator.yaml at the root makes a package, not a bundle.
		{"package", tgz(t, file("operator.yaml", "name: p\n"), file("templates/a.yaml", "a: b\n")), `entry "operator.yaml": is a file at the top of the archive`},
		// The hostile-entry rules hold for bundles too.
		{"parent path", tgz(t, file("manifests/../../x.yaml", "x")), `contains ".."`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := archive.CheckBundleArchive(tt.archive, archive.Limits{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckBundleArchive() = %v, want it accepted", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckBundleArchive() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
