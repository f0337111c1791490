package wake

import (
	"testing"
	"time"
)

func TestFinalized(t *testing.T) {
	var f Finalized
	t0 := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	if f.Has("a", t0) {
		t.Error("an empty Finalized has a")
	}
	f.Add("a", t0)
	if !f.Has("a", t0.Add(FinalizedFor)) {
		t.Error("a forgotten before FinalizedFor passed")
	}
	if f.Has("a", t0.Add(FinalizedFor+time.Second)) {
		t.Error("a remembered after FinalizedFor")
	}
	if f.Has("b", t0) {
		t.Error("b, never added, is finalized")
	}
	// Adding forgets what has expired, so the set stays as small as the
	// uninstalls of the last FinalizedFor.
	f.Add("b", t0.Add(FinalizedFor+time.Second))
	if n := len(f.uids); n != 1 {
		t.Errorf("%d UIDs held after a expired and b was added, want 1", n)
	}
}
