package shard

import "testing"

// TestClusterShare: a managed cluster gets a quarter of the workers (at
// least 2) at once; the others are not held back by it, the hub is not
// bounded, and a turn given back can be taken again.
func TestClusterShare(t *testing.T) {
	for _, tc := range []struct{ workers, limit int }{{32, 8}, {4, 2}, {1, 2}, {100, 25}} {
		c := NewShare(tc.workers)
		for i := range tc.limit {
			if !c.Take("slow") {
				t.Fatalf("%d workers: turn %d of cluster slow refused, want %d", tc.workers, i+1, tc.limit)
			}
		}
		if c.Take("slow") {
			t.Errorf("%d workers: cluster slow got turn %d, want at most %d", tc.workers, tc.limit+1, tc.limit)
		}
		if !c.Take("other") {
			t.Errorf("%d workers: cluster other is held back by slow", tc.workers)
		}
		for range 3 * tc.limit {
			if !c.Take("") {
				t.Fatalf("%d workers: the hub is bounded", tc.workers)
			}
		}
		c.Give("slow")
		if !c.Take("slow") {
			t.Errorf("%d workers: a turn given back cannot be taken", tc.workers)
		}
	}
	var none *Share
	if !none.Take("x") {
		t.Error("a nil Share bounds")
	}
	none.Give("x")
}
