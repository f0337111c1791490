// Package helmrepo builds Helm charts and serves them from an HTTP Helm
// repository on 127.0.0.1, for the integration tests of other packages.
package helmrepo

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/catalog"
)

// Chart describes a chart to build in a test. Chart.yaml is generated from
// the fields; Files holds everything else.
type Chart struct {
	Name, Version, AppVersion, KubeVersion, Description string
	// Annotations go into Chart.yaml, e.g. annex.dev/dependencies.
	Annotations map[string]string
	// Files maps a path inside the chart to its content, e.g.
	// "templates/cm.yaml", "values.yaml", "values.schema.json", "crds/x.yaml".
	Files map[string]string
}

// chartMetadata is the Chart.yaml of a Chart, and also its entry in
// index.yaml (plus urls and digest), as Helm writes them.
type chartMetadata struct {
	APIVersion  string            `json:"apiVersion"`
	Name        string            `json:"name"`
	Version     string            `json:"version"`
	AppVersion  string            `json:"appVersion,omitempty"`
	KubeVersion string            `json:"kubeVersion,omitempty"`
	Description string            `json:"description,omitempty"`
	Type        string            `json:"type"`
	Annotations map[string]string `json:"annotations,omitempty"`
	URLs        []string          `json:"urls,omitempty"`
	Created     string            `json:"created,omitempty"`
	Digest      string            `json:"digest,omitempty"`
}

func (c Chart) metadata() chartMetadata {
	return chartMetadata{
		APIVersion:  "v2",
		Name:        c.Name,
		Version:     c.Version,
		AppVersion:  c.AppVersion,
		KubeVersion: c.KubeVersion,
		Description: c.Description,
		Type:        "application",
		Annotations: c.Annotations,
	}
}

// Archive builds the chart's .tgz. The bytes depend only on c.
func Archive(c Chart) ([]byte, error) {
	if c.Name == "" || c.Version == "" {
		return nil, fmt.Errorf("helmrepo: chart %q %q: Name and Version are required", c.Name, c.Version)
	}
	if _, ok := c.Files["Chart.yaml"]; ok {
		return nil, fmt.Errorf("helmrepo: chart %s %s: Chart.yaml is generated from the Chart fields; remove it from Files", c.Name, c.Version)
	}
	chartYAML, err := yaml.Marshal(c.metadata())
	if err != nil {
		return nil, fmt.Errorf("helmrepo: chart %s %s: %w", c.Name, c.Version, err)
	}
	files := map[string][]byte{"Chart.yaml": chartYAML}
	for p, content := range c.Files {
		files[p] = []byte(content)
	}
	return catalog.ChartArchive(c.Name, files)
}

// Server is an HTTP Helm repository on 127.0.0.1 serving index.yaml and
// chart archives at /<name>-<version>.tgz. Index entries use relative URLs,
// as `helm repo index` without --url writes them, and carry each archive's
// digest. Charts may be added while it runs; the index is regenerated. It is
// safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	down     bool
	index    []byte
	charts   map[string]chartMetadata // by archive file name
	archives map[string][]byte        // by "/" + archive file name
	requests map[string]int           // GETs by path
}

// NewServer starts a repository serving charts and closes it on t.Cleanup.
func NewServer(t testing.TB, charts ...Chart) *Server {
	t.Helper()
	s := &Server{
		charts:   map[string]chartMetadata{},
		archives: map[string][]byte{},
		requests: map[string]int{},
	}
	s.Add(t, charts...)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the repository URL (no trailing slash) to put into a Catalog.
func (s *Server) URL() string { return s.srv.URL }

// Add builds charts, stores their archives and regenerates the index. A
// chart with the name and version of one already served replaces it, which
// lets a test change an archive behind the catalog's back.
func (s *Server) Add(t testing.TB, charts ...Chart) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range charts {
		data, err := Archive(c)
		if err != nil {
			t.Fatal(err)
		}
		file := c.Name + "-" + c.Version + ".tgz"
		md := c.metadata()
		md.URLs = []string{file}
		md.Created = "2024-01-01T00:00:00Z"
		md.Digest = strings.TrimPrefix(catalog.Digest(data), "sha256:")
		s.charts[file] = md
		s.archives["/"+file] = data
	}
	index, err := s.renderIndex()
	if err != nil {
		t.Fatal(err)
	}
	s.index = index
}

// ReplaceArchive serves c's archive in place of the one of the same name
// and version and leaves index.yaml as it is, so that the digest the
// index records no longer matches what is served: a repository that
// re-published an archive without reindexing. Add the chart to reindex.
func (s *Server) ReplaceArchive(t testing.TB, c Chart) {
	t.Helper()
	data, err := Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := "/" + c.Name + "-" + c.Version + ".tgz"
	if _, ok := s.archives[path]; !ok {
		t.Fatalf("helmrepo: %s %s is not served; Add it first", c.Name, c.Version)
	}
	s.archives[path] = data
}

// SetProvenance serves prov as the Helm provenance file of c,
// /<name>-<version>.tgz.prov (what `helm package --sign` writes next to
// the archive); nil stops serving it.
func (s *Server) SetProvenance(c Chart, prov []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := "/" + c.Name + "-" + c.Version + ".tgz.prov"
	if prov == nil {
		delete(s.archives, path)
		return
	}
	s.archives[path] = prov
}

// renderIndex writes index.yaml for the stored charts, versions highest
// first as Helm sorts them. Callers hold s.mu.
func (s *Server) renderIndex() ([]byte, error) {
	entries := map[string][]chartMetadata{}
	for _, md := range s.charts {
		entries[md.Name] = append(entries[md.Name], md)
	}
	for _, versions := range entries {
		sort.Slice(versions, func(i, j int) bool {
			vi, erri := semver.NewVersion(versions[i].Version)
			vj, errj := semver.NewVersion(versions[j].Version)
			if erri != nil || errj != nil {
				// A test may serve an invalid version on purpose.
				return versions[i].Version > versions[j].Version
			}
			return vi.GreaterThan(vj)
		})
	}
	return yaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"entries":    entries,
		"generated":  "2024-01-01T00:00:00Z",
	})
}

// SetDown makes the server answer 503 Service Unavailable to every request
// while down is true, as an unreachable repository behind a proxy does.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Requests reports how many GET requests path (e.g. "/index.yaml")
// received, counting those answered 503 or 404.
func (s *Server) Requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	status, contentType, body := s.lookup(r)
	if status != http.StatusOK {
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

// lookup counts the request and picks the answer; the body is written after
// the lock is released so that a slow client does not stall the others.
func (s *Server) lookup(r *http.Request) (status int, contentType string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodGet {
		s.requests[r.URL.Path]++
	}
	if s.down {
		return http.StatusServiceUnavailable, "", nil
	}
	if r.URL.Path == "/index.yaml" {
		return http.StatusOK, "application/x-yaml", s.index
	}
	if data, ok := s.archives[r.URL.Path]; ok {
		return http.StatusOK, "application/gzip", data
	}
	return http.StatusNotFound, "", nil
}
