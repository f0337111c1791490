package catalog

import (
	"strings"
	"unicode"
)

// isControl reports characters that must not reach a terminal or a UI from
// a catalog: C0 and C1 controls (ESC starts terminal escape sequences,
// CVE-2021-21303), DEL, and the bidirectional overrides that reorder text.
func isControl(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// hasControl reports whether s holds a character isControl refuses.
func hasControl(s string) bool {
	return strings.IndexFunc(s, isControl) >= 0
}

// cleanText removes control characters from text shown to people
// (descriptions, display names, keywords, URLs of icons and home pages),
// keeping newlines and tabs, which are harmless, out of one-line fields
// too: they become spaces.
func cleanText(s string) string {
	if !hasControl(s) {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case isControl(r):
			return -1
		}
		return r
	}, s)
}
