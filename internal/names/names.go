// Package names keeps the names and label values Annex composes from
// other names valid whatever the length of those names: beyond its limit,
// a composed name keeps a readable beginning and ends in a hash of the
// whole, so that it is deterministic (every writer and every lookup
// computes the same value) and distinct names stay distinct.
package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The limits of the kinds of names Annex composes.
const (
	// MaxLabelValue bounds a label value (and the name part of a label
	// or annotation key).
	MaxLabelValue = validation.LabelValueMaxLength
	// MaxDNSLabel bounds the names that must be DNS-1123 labels:
	// Namespaces, Services, and an installation's name, which charts name
	// their objects after.
	MaxDNSLabel = validation.DNS1123LabelMaxLength
	// MaxSubdomain bounds the names of most other objects (Secrets,
	// ConfigMaps, custom resources).
	MaxSubdomain = validation.DNS1123SubdomainMaxLength
)

// hashDigits is how many hex digits of the SHA-256 of the whole name end
// a shortened one.
const hashDigits = 8

// Bounded returns name when it has at most limit characters. Otherwise
// it returns the first limit-9 characters of name, without the '-', '.'
// and '_' that would end them, then "-" and the first 8 hex digits of
// the SHA-256 of name: at most limit characters, the same for the same
// name, and different for names that differ anywhere (unless their
// hashes collide, one chance in 2^32).
//
// The result keeps only characters of name and ends in a letter or a
// digit, so it is a valid label value, DNS-1123 label or subdomain when
// name is made of the characters those allow. limit must be more than 9.
func Bounded(name string, limit int) string {
	if len(name) <= limit {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:limit-hashDigits-1], "-._") + "-" + hex.EncodeToString(sum[:])[:hashDigits]
}

// LabelValue returns name as a label value: name itself when it has at
// most 63 characters, otherwise name shortened as Bounded does. Writers
// of a label and selectors on it both call it, so that they match.
func LabelValue(name string) string { return Bounded(name, MaxLabelValue) }
