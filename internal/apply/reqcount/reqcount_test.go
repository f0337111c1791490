package reqcount

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/rest"
)

func TestCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c := &Counter{}
	cfg := c.Wrap(&rest.Config{Host: srv.URL})
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	send := func(method, query string) {
		req, err := http.NewRequest(method, srv.URL+"/api/v1/namespaces/demo/configmaps/c"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send(http.MethodGet, "")
	before := c.Snapshot()
	send(http.MethodPatch, "")
	// A dry run is a request but not a write.
	send(http.MethodPatch, "?dryRun=All")
	send(http.MethodDelete, "")

	got := c.Snapshot().Sub(before)
	if want := map[string]int{"PATCH": 2, "DELETE": 1}; !maps.Equal(got.ByMethod, want) || got.Total != 3 || got.Writes != 2 {
		t.Errorf("counts since the GET = %+v, want %v, 3 in total, 2 writes", got, want)
	}
	if all := c.Snapshot(); all.Total != 4 || all.ByMethod["GET"] != 1 {
		t.Errorf("all counts = %+v, want 4 requests, 1 GET", all)
	}
}
