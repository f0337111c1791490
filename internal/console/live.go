package console

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// notifier numbers the changes the informers see and tells open pages
// about them over server-sent events, at most once per interval: a burst
// of a thousand status updates costs each page one refresh. A page may
// follow one object (an installation's page follows that installation):
// it then hears only of that object's changes, so that a busy fleet does
// not make it read its events and inventory again and again.
type notifier struct {
	interval time.Duration

	mu      sync.Mutex
	seq     uint64
	objects map[string]uint64 // object key → seq of its last change
	pending bool
	subs    map[*subscriber]struct{}
}

type subscriber struct {
	key  string // "" follows every change
	last uint64 // the number last sent
	ch   chan uint64
}

func newNotifier(interval time.Duration) *notifier {
	return &notifier{interval: interval, objects: map[string]uint64{}, subs: map[*subscriber]struct{}{}}
}

// changed records a change of the object key ("" when it is not
// followed); subscribers hear of it within interval.
func (n *notifier) changed(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seq++
	if key != "" {
		n.objects[key] = n.seq
	}
	if n.pending {
		return
	}
	n.pending = true
	time.AfterFunc(n.interval, n.flush)
}

func (n *notifier) flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pending = false
	for s := range n.subs {
		n.send(s)
	}
}

// send gives s the number it follows if it moved; callers hold n.mu.
func (n *notifier) send(s *subscriber) {
	v := n.currentLocked(s.key)
	if v == s.last {
		return
	}
	select {
	case s.ch <- v:
		s.last = v
	default: // a number waits unread; the next flush sends the newest
	}
}

// current is the number a page following key ("" for every change) is
// up to date with until it moves.
func (n *notifier) current(key string) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.currentLocked(key)
}

func (n *notifier) currentLocked(key string) uint64 {
	if key == "" {
		return n.seq
	}
	return n.objects[key]
}

func (n *notifier) subscribe(key string) (*subscriber, func()) {
	s := &subscriber{key: key, last: ^uint64(0), ch: make(chan uint64, 1)}
	n.mu.Lock()
	n.subs[s] = struct{}{}
	n.send(s) // the current number first
	n.mu.Unlock()
	return s, func() {
		n.mu.Lock()
		delete(n.subs, s)
		n.mu.Unlock()
	}
}

// serveEvents streams "change" events carrying the change number of the
// object the query parameter key names (every change when it is empty),
// the current one first, and a comment every keepalive so that proxies
// and the browser keep the stream open. A page refreshes its content
// when the number differs from the one it was rendered at.
func (n *notifier) serveEvents(w http.ResponseWriter, r *http.Request, keepalive time.Duration) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	s, cancel := n.subscribe(r.URL.Query().Get("key"))
	defer cancel()
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	tick := time.NewTicker(keepalive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case seq := <-s.ch:
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", seq)
		case <-tick.C:
			fmt.Fprint(w, ": keepalive\n\n")
		}
		flusher.Flush()
	}
}

// profileKey is the key a page follows for one profile.
func profileKey(name string) string {
	return "ExtensionProfile/" + name
}

// objectKey is the key a page follows for one installation.
func objectKey(namespace, name string) string {
	return "ExtensionInstallation/" + namespace + "/" + name
}
