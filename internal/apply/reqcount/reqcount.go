// Package reqcount counts the requests a Kubernetes client sends, by HTTP
// method, for tests and benchmarks that measure how much an applier asks
// of an API server.
package reqcount

import (
	"maps"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
)

// Counter counts requests. The zero value is ready; it is safe for
// concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts Counts
}

// Counts is a tally of requests.
type Counts struct {
	// ByMethod counts requests by HTTP method (GET, POST, PATCH, ...).
	ByMethod map[string]int
	// Total counts every request.
	Total int
	// Writes counts POST, PUT, PATCH and DELETE requests that are not
	// dry runs (no dryRun query parameter).
	Writes int
}

// Sub returns c minus earlier, for the requests made in between.
func (c Counts) Sub(earlier Counts) Counts {
	out := Counts{ByMethod: map[string]int{}, Total: c.Total - earlier.Total, Writes: c.Writes - earlier.Writes}
	for m, n := range c.ByMethod {
		if d := n - earlier.ByMethod[m]; d != 0 {
			out.ByMethod[m] = d
		}
	}
	return out
}

// Wrap returns a copy of cfg whose clients count their requests in c.
func (c *Counter) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	inner := out.WrapTransport
	out.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if inner != nil {
			rt = inner(rt)
		}
		return roundTripper{counter: c, next: rt}
	}
	return out
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.counts
	out.ByMethod = maps.Clone(c.counts.ByMethod)
	if out.ByMethod == nil {
		out.ByMethod = map[string]int{}
	}
	return out
}

func (c *Counter) add(req *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts.ByMethod == nil {
		c.counts.ByMethod = map[string]int{}
	}
	c.counts.ByMethod[req.Method]++
	c.counts.Total++
	if isWrite(req) {
		c.counts.Writes++
	}
}

func isWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return !req.URL.Query().Has("dryRun")
	}
	return false
}

type roundTripper struct {
	counter *Counter
	next    http.RoundTripper
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r.counter.add(req)
	return r.next.RoundTrip(req)
}
