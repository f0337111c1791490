package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestBounded(t *testing.T) {
	c63 := strings.Repeat("c", 63)
	for _, tc := range []struct {
		name  string
		limit int
		want  string
	}{
		// A name within the limit is itself: existing objects keep their names.
		{"greetings-crd-edge-1", MaxLabelValue, "greetings-crd-edge-1"},
		// Exactly at the limit: still itself.
		{c63, MaxLabelValue, c63},
		// One past the limit: 54 characters kept, then "-" and 8 hex digits of the whole.
		{c63 + "x", MaxLabelValue, strings.Repeat("c", 54) + "-" + hashOf(c63+"x")},
		// A cut that ends in '-', '.' or '_' drops them, so the result ends in a hex digit.
		{strings.Repeat("a", 52) + "-._" + strings.Repeat("b", 20), MaxLabelValue,
			strings.Repeat("a", 52) + "-" + hashOf(strings.Repeat("a", 52)+"-._"+strings.Repeat("b", 20))},
		// A subdomain limit keeps up to 244 characters of a longer name (here 243: the cut ends in a dot).
		{strings.Repeat("s.", 150), MaxSubdomain, strings.Repeat("s.", 121) + "s-" + hashOf(strings.Repeat("s.", 150))},
	} {
		got := Bounded(tc.name, tc.limit)
		if got != tc.want {
			t.Errorf("Bounded(%q, %d) = %q, want %q", tc.name, tc.limit, got, tc.want)
		}
		if len(got) > tc.limit {
			t.Errorf("Bounded(%q, %d) has %d characters", tc.name, tc.limit, len(got))
		}
	}
}

// TestBoundedValid checks that what Bounded makes of valid names is valid
// for the same use, with names of 63 to 253 characters and every cut.
func TestBoundedValid(t *testing.T) {
	for n := 1; n <= MaxSubdomain; n++ {
		// Cluster names with dots, and installation names with dashes,
		// placed so that every cut position meets one.
		name := strings.Repeat("a", n/2) + strings.Repeat("-b.c", MaxSubdomain)[:n-n/2-1] + "z"
		name = strings.ReplaceAll(name, "-.", "-a")
		name = strings.ReplaceAll(name, ".-", "a-")
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("test name %q: %v", name, errs)
		}
		if errs := validation.IsValidLabelValue(LabelValue(name)); len(errs) > 0 {
			t.Errorf("LabelValue(%q) = %q: %v", name, LabelValue(name), errs)
		}
		if errs := validation.IsDNS1123Subdomain(Bounded(name, MaxSubdomain-len(".v1"))); len(errs) > 0 {
			t.Errorf("Bounded(%q, 250): %v", name, errs)
		}
		dashed := strings.ReplaceAll(name, ".", "-")
		if errs := validation.IsDNS1123Label(Bounded(dashed, MaxDNSLabel)); len(errs) > 0 {
			t.Errorf("Bounded(%q, 63): %v", dashed, errs)
		}
	}
}

// TestBoundedDistinct checks that names differing only past the cut stay
// distinct: the lookups by label of two installations must not meet.
func TestBoundedDistinct(t *testing.T) {
	seen := map[string]string{}
	prefix := strings.Repeat("x", 70)
	for i := range 100000 {
		name := prefix + strconv.Itoa(i)
		v := LabelValue(name)
		if other, ok := seen[v]; ok && other != name {
			t.Fatalf("%q and %q have the same label value %q", name, other, v)
		}
		seen[v] = name
	}
}

// hashOf is the first 8 hex digits of the SHA-256 of s.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
