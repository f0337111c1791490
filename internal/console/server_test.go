package console

import (
	"testing"
	"time"
)

func TestHostAllowed(t *testing.T) {
	for _, tc := range []struct {
		address, host string
		want          bool
	}{
		// Loopback names, on any port.
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"127.0.0.1:8080", "localhost:9000", true},
		{"127.0.0.1:8080", "[::1]:8080", true},
		// Another name: a page elsewhere rebinding its DNS name.
		{"127.0.0.1:8080", "attacker.example:8080", false},
		{"127.0.0.1:8080", "192.168.1.5:8080", false},
		// The console's own host when it listens elsewhere.
		{"192.168.1.5:8080", "192.168.1.5:8080", true},
		// Listening on every address: any IP, still no other name.
		{"0.0.0.0:8080", "10.0.0.7:8080", true},
		{"0.0.0.0:8080", "attacker.example:8080", false},
	} {
		if got := (&Server{address: tc.address}).hostAllowed(tc.host); got != tc.want {
			t.Errorf("listening on %s, Host %s: allowed %v, want %v", tc.address, tc.host, got, tc.want)
		}
	}
}

// A page following one installation hears of its changes only; a page
// following everything hears of every change; both start with the
// number they are up to date with.
func TestNotifierFollowsOneObjectOrAll(t *testing.T) {
	n := newNotifier(time.Millisecond)
	a, b := objectKey("ns", "a"), objectKey("ns", "b")
	n.changed(a) // 1
	one, stopOne := n.subscribe(a)
	defer stopOne()
	all, stopAll := n.subscribe("")
	defer stopAll()
	if got := receive(t, one.ch); got != 1 {
		t.Errorf("following a, first number %d, want 1", got)
	}
	if got := receive(t, all.ch); got != 1 {
		t.Errorf("following all, first number %d, want 1", got)
	}
	n.changed(b) // 2: only "all" hears of it
	if got := receive(t, all.ch); got != 2 {
		t.Errorf("following all, after b changed: %d, want 2", got)
	}
	n.changed(a) // 3
	if got := receive(t, one.ch); got != 3 {
		t.Errorf("following a, after b and a changed: %d, want 3 (b's change must not be sent)", got)
	}
	if got := receive(t, all.ch); got != 3 {
		t.Errorf("following all, after a changed: %d, want 3", got)
	}
}

// receive waits for a number, failing the test if none comes within 10s.
func receive(t *testing.T, ch chan uint64) uint64 {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no change number was sent")
		return 0
	}
}

// A condition's colour follows what its status means for its type; the
// badge's text says the status in any case.
func TestCondStatus(t *testing.T) {
	class := funcs["condStatus"].(func(string, string) string)
	for _, tc := range []struct{ condType, status, want string }{
		{"Ready", "True", "ok"},
		{"Ready", "False", "bad"},
		{"Ready", "Unknown", "wait"},
		{"Stalled", "True", "bad"},
		{"Stalled", "False", "ok"},
		{"Reconciling", "True", "wait"},
	} {
		if got := class(tc.condType, tc.status); got != tc.want {
			t.Errorf("%s=%s: class %q, want %q", tc.condType, tc.status, got, tc.want)
		}
	}
}
