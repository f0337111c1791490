package archive_test

import (
	"archive/tar"
	"testing"

	"github.com/annex-platform/annex/internal/archive"
)

// TestCheckEntryName has one case per class of name the catalog refuses,
// with its message, and the names it accepts.
func TestCheckEntryName(t *testing.T) {
	tests := []struct {
		name string
		want string // "" means accepted
	}{
		{"demo/templates/cm.yaml", ""},
		{"demo/", ""},          // a folder's trailing "/"
		{"demo/\xff.yaml", ""}, // invalid UTF-8 is not the catalog's concern
		{"", "has an empty name"},
		{"/etc/passwd", "is an absolute path; chart entries are relative"},
		{`demo\..\x`, `contains a backslash; chart entries use "/"`},
		{"C:/Windows/x", "starts with a drive letter; chart entries are relative"},
		{"demo/\x1b[2Jx.yaml", "contains control characters"},
		{"demo/\u0085x.yaml", "contains control characters"}, // C1
		{"demo/\u202ex.yaml", "contains control characters"}, // a bidirectional override
		{"demo/../../etc/x", `contains ".."; chart entries stay inside the chart folder`},
		{"demo//x", "is not a clean path"},
		{"demo/./x", "is not a clean path"},
		{"demo//../x", "is not a clean path"}, // the first bad segment is named
		{"demo//", "is not a clean path"},
	}
	for _, tt := range tests {
		err := archive.CheckEntryName(tt.name)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckEntryName(%q) = %v, want it accepted", tt.name, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("CheckEntryName(%q) = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestCheckName has one case per Problem of the engines' name rules,
// which differ from the catalog's where the engines always did.
func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		want archive.Problem
	}{
		{"manifests/csv.yaml", 0},
		{"C:/x", 0},      // drive letters are the catalog's rule
		{"a/\u0085x", 0}, // so are C1 controls
		{"", archive.EmptyName},
		{"/etc/passwd", archive.AbsolutePath},
		{`a\b`, archive.Backslash},
		{"a/\x7fb", archive.ControlCharacters},
		{"a/../b", archive.ParentPath},
		{"a//../b", archive.ParentPath}, // ".." wherever it is
		{"a//b", archive.UncleanPath},
		{".", archive.UncleanPath},
		{"a/", archive.UncleanPath}, // engines strip a folder's "/" first
		{"a/\xff", archive.UncleanPath},
	}
	for _, tt := range tests {
		if got := archive.CheckName(tt.name); got != tt.want {
			t.Errorf("CheckName(%q) = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestCheckType(t *testing.T) {
	tests := []struct {
		typ  byte
		want archive.Problem
	}{
		{tar.TypeReg, 0},
		{tar.TypeDir, 0},
		{tar.TypeSymlink, archive.SymbolicLink},
		{tar.TypeLink, archive.HardLink},
		{tar.TypeChar, archive.SpecialFile},
		{tar.TypeFifo, archive.SpecialFile},
		{tar.TypeXGlobalHeader, archive.SpecialFile},
	}
	for _, tt := range tests {
		if got := archive.CheckType(&tar.Header{Typeflag: tt.typ}); got != tt.want {
			t.Errorf("CheckType(%q) = %d, want %d", tt.typ, got, tt.want)
		}
	}
}
