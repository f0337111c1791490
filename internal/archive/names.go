package archive

import (
	"errors"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CheckName returns the first rule a relative, slash-separated entry name
// breaks, or zero: EmptyName, AbsolutePath, Backslash, ControlCharacters
// (C0 controls and DEL), ParentPath (a ".." segment), UncleanPath (empty
// or "." segments, invalid UTF-8, or any other difference from
// path.Clean; a trailing "/" too). The engines call it after stripping
// what their archives may lead names with ("./", and "/" in image
// layers) and, for a folder, its trailing "/".
func CheckName(name string) Problem {
	return checkName(name, false)
}

// CheckEntryName refuses, with the catalog's wording, archive entry names
// that could land outside the chart folder when extracted, or confuse a
// terminal when shown: the rules of CheckName, plus a drive letter
// ("C:") and every character IsControl reports; one trailing "/" (a
// folder's) and invalid UTF-8 are not refused. The error says which.
func CheckEntryName(name string) error {
	if p := checkName(name, true); p != 0 {
		return errors.New(chartNameReason[p])
	}
	return nil
}

// chartNameReason words the name problems for charts and packages in a
// catalog (UnsafeArchiveError's Reason).
var chartNameReason = map[Problem]string{
	EmptyName:         "has an empty name",
	AbsolutePath:      "is an absolute path; chart entries are relative",
	Backslash:         `contains a backslash; chart entries use "/"`,
	DriveLetter:       "starts with a drive letter; chart entries are relative",
	ControlCharacters: "contains control characters",
	ParentPath:        `contains ".."; chart entries stay inside the chart folder`,
	UncleanPath:       "is not a clean path",
}

// checkName is CheckName; strict adds drive letters and the control
// characters of IsControl beyond C0 and DEL.
func checkName(name string, strict bool) Problem {
	control := func(r rune) bool { return r < 0x20 || r == 0x7f }
	if strict {
		control = IsControl
	}
	switch {
	case name == "":
		return EmptyName
	case strings.HasPrefix(name, "/"):
		return AbsolutePath
	case strings.Contains(name, `\`):
		return Backslash
	case strict && len(name) >= 2 && name[1] == ':':
		return DriveLetter
	case strings.ContainsFunc(name, control):
		return ControlCharacters
	}
	clean := name
	if strict {
		// A folder's trailing "/"; the engines strip it themselves.
		clean = strings.TrimSuffix(name, "/")
	}
	segments := strings.Split(clean, "/")
	unclean := func(seg string) bool { return seg == "" || seg == "." }
	for _, seg := range segments {
		if seg == ".." {
			return ParentPath
		}
		// The catalog names the first bad segment; the engines name ".."
		// before an unclean segment wherever it is.
		if strict && unclean(seg) {
			return UncleanPath
		}
	}
	// The engines read names as fs.ValidPath does, which refuses
	// invalid UTF-8; the catalog never refused it.
	if slices.ContainsFunc(segments, unclean) || path.Clean(name) != clean || !strict && !utf8.ValidString(name) {
		return UncleanPath
	}
	return 0
}

// IsControl reports characters that must not reach a terminal or a UI
// from a catalog: C0 and C1 controls (ESC starts terminal escape
// sequences, CVE-2021-21303), DEL, and the bidirectional overrides that
// reorder text.
func IsControl(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
