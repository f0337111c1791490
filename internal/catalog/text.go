package catalog

import (
	"errors"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/annex-platform/annex/internal/archive"
)

// isControl reports characters that must not reach a terminal or a UI from
// a catalog (archive.IsControl): C0 and C1 controls, DEL, and the
// bidirectional overrides that reorder text.
var isControl = archive.IsControl

// HasControl reports whether s holds a character that must not reach a
// terminal or a UI from a catalog: C0 and C1 controls, DEL, and the
// bidirectional overrides.
func HasControl(s string) bool {
	return strings.IndexFunc(s, isControl) >= 0
}

// CleanText removes control characters from text shown to people
// (descriptions, display names, keywords, URLs of icons and home pages),
// keeping newlines and tabs, which are harmless, out of one-line fields
// too: they become spaces.
func CleanText(s string) string {
	if !HasControl(s) {
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

// YAMLReason turns a YAML decoding error into one line, naming each
// mistake once.
func YAMLReason(err error) string {
	var typeErr *yaml.TypeError
	if errors.As(err, &typeErr) {
		// An alias repeats one mistake many times; say it once.
		return strings.Join(slices.Compact(slices.Clone(typeErr.Errors)), "; ")
	}
	return err.Error()
}
