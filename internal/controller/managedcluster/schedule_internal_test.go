package managedcluster

import (
	"fmt"
	"testing"
	"time"
)

// TestNextProbeSpreadsTheFleet: 1,000 clusters registered at the same
// moment are probed next spread over the interval (each tenth of it gets
// between half and twice its share), every delay is more than half an
// interval and at most one and a half, and a cluster probed at its slot
// is probed again one interval later.
func TestNextProbeSpreadsTheFleet(t *testing.T) {
	const interval = 30 * time.Second
	now := time.Date(2026, 11, 26, 22, 0, 7, 0, time.UTC)
	buckets := make([]int, 10)
	for i := range 1000 {
		name := fmt.Sprintf("cluster-%04d", i)
		d := nextProbe(name, now, interval)
		if d <= interval/2 || d > interval*3/2 {
			t.Fatalf("nextProbe(%s) = %v, want in (%v, %v]", name, d, interval/2, interval*3/2)
		}
		at := now.Add(d)
		buckets[int(at.Sub(at.Truncate(interval))*10/interval)]++
		// At its slot (a little late, as timers are), the next is one interval on.
		late := at.Add(20 * time.Millisecond)
		if again := late.Add(nextProbe(name, late, interval)); !again.Equal(at.Add(interval)) {
			t.Fatalf("%s probed at %v is next probed at %v, want %v", name, late, again, at.Add(interval))
		}
	}
	for i, n := range buckets {
		if n < 50 || n > 200 {
			t.Errorf("tenth %d of the interval has %d of 1,000 probes, want 50–200: %v", i, n, buckets)
		}
	}
}
