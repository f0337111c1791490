package resolve

import "math/bits"

// vset is a set of versions of one extension: bit i stands for the
// extension's i-th known version in ascending order (see extIndex.versions).
// Because every range is evaluated against the known versions only, union,
// intersection and complement are word operations. A vset never holds bits
// at or above the extension's version count.
type vset []uint64

func words(n int) int { return (n + 63) / 64 }

// fullSet returns the set of all n versions.
func fullSet(n int) vset {
	s := make(vset, words(n))
	for i := range s {
		s[i] = ^uint64(0)
	}
	if r := n % 64; r != 0 {
		s[len(s)-1] = (1 << r) - 1
	}
	return s
}

func (s vset) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

func (s vset) add(i int) { s[i/64] |= 1 << (i % 64) }

func (s vset) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

func (s vset) count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

func (s vset) equal(o vset) bool {
	for i := range s {
		if s[i] != o[i] {
			return false
		}
	}
	return true
}

// subsetOf reports s ⊆ o.
func (s vset) subsetOf(o vset) bool {
	for i := range s {
		if s[i]&^o[i] != 0 {
			return false
		}
	}
	return true
}

// disjoint reports s ∩ o = ∅.
func (s vset) disjoint(o vset) bool {
	for i := range s {
		if s[i]&o[i] != 0 {
			return false
		}
	}
	return true
}

func (s vset) and(o vset) vset { return make(vset, len(s)).setAnd(s, o) }

func (s vset) andNot(o vset) vset { return make(vset, len(s)).setAndNot(s, o) }

// highest returns the highest member, -1 when s is empty.
func (s vset) highest() int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != 0 {
			return i*64 + 63 - bits.LeadingZeros64(s[i])
		}
	}
	return -1
}

// The set* methods write into s (len(s) == len(a) == len(b)) and return
// it; s may be a or b. They let the solver's hot path reuse memory.

func (s vset) setAnd(a, b vset) vset {
	for i := range s {
		s[i] = a[i] & b[i]
	}
	return s
}

func (s vset) setOr(a, b vset) vset {
	for i := range s {
		s[i] = a[i] | b[i]
	}
	return s
}

func (s vset) setAndNot(a, b vset) vset {
	for i := range s {
		s[i] = a[i] &^ b[i]
	}
	return s
}

// highestAnd returns the highest member of s ∩ o, -1 when there is none,
// without building the intersection.
func (s vset) highestAnd(o vset) int {
	for i := len(s) - 1; i >= 0; i-- {
		if w := s[i] & o[i]; w != 0 {
			return i*64 + 63 - bits.LeadingZeros64(w)
		}
	}
	return -1
}
