package console

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
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

// A page reflects the change number from before its data was read: when
// its object changes while the request runs, the page gets the request's
// start number, lower than the one the live stream sends first, so the
// page fetches itself again rather than keep data older than its number.
func TestPageSeqPredatesTheRead(t *testing.T) {
	s := &Server{live: newNotifier(time.Millisecond)}
	key := objectKey("ns", "web")
	s.live.changed(key) // 1
	var during, after uint64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.live.changed(key) // 2: lands while the page is read
		during = s.pageSeq(r, key)
		after = s.pageSeq(r, objectKey("ns", "other"))
	})
	r := httptest.NewRequest(http.MethodGet, "/installations/ns/web", nil)
	h.ServeHTTP(httptest.NewRecorder(), r.WithContext(context.WithValue(r.Context(), startSeqKey{}, s.live.current(""))))
	if during != 1 {
		t.Errorf("page of an object changed during the request: seq %d, want the start number 1", during)
	}
	if after != 0 {
		t.Errorf("page of an object that did not change: seq %d, want its own number 0", after)
	}
	if got := s.pageSeq(httptest.NewRequest(http.MethodGet, "/", nil).WithContext(context.WithValue(context.Background(), startSeqKey{}, s.live.current(""))), key); got != 2 {
		t.Errorf("page read after the change: seq %d, want 2", got)
	}
}

// The pages' query: what each parameter takes, and the errors that name
// the parameter.
func TestParseFleetFilter(t *testing.T) {
	for _, tc := range []struct {
		query string
		page  int
		limit int
		err   string
	}{
		// Nothing asked: the first page of 100.
		{"", 1, 100, ""},
		{"selector=env%3Dprod%2Ctier%21%3Dweb&state=notready%2Cunreachable&page=3&limit=20", 3, 20, ""},
		// A limit above 500 is 500.
		{"limit=501", 1, 500, ""},
		{"selector=env+in+prod", 1, 100, `selector: "env in prod" is not a label selector`},
		{"state=sick", 1, 100, `state: "sick" is not a cluster state`},
		{"page=0", 1, 100, `page="0": give a page number from 1`},
		{"limit=-5", 1, 100, `limit="-5": give the number of rows a page shows, from 1 to 500`},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		f, fq, err := parseFleetFilter(q)
		switch {
		case tc.err != "":
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one starting %s", tc.query, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.query, err)
		case f.Page != tc.page || f.Limit != tc.limit:
			t.Errorf("%q: page %d, limit %d; want %d, %d", tc.query, f.Page, f.Limit, tc.page, tc.limit)
		case f.Selector != "" && fq.Selector.String() != "env=prod,tier!=web":
			t.Errorf("%q: selector %s", tc.query, fq.Selector)
		}
	}
}

// The prev and next links keep every filter and drop a flash message.
func TestPageURL(t *testing.T) {
	q := url.Values{"selector": {"env=prod"}, "state": {"notready"}, "page": {"2"}, "flash": {"abc"}}
	if got, want := pageURL("/clusters", q, 3), "/clusters?page=3&selector=env%3Dprod&state=notready"; got != want {
		t.Errorf("pageURL: %s, want %s", got, want)
	}
	if got := pageURL("/clusters", q, 0); got != "" {
		t.Errorf("pageURL of no page: %q, want \"\"", got)
	}
}
