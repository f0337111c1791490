package localcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an OCI registry on 127.0.0.1 for `annex dev`, so that a
// user can push packages and charts (annexctl package push --plain-http)
// and add a catalog of them without Docker or a registry of their own. It
// is go-containerregistry's registry: blobs are files under
// <dir>/blobs, and every manifest pushed or deleted is appended to
// <dir>/manifests.jsonl and replayed at the next start, so that a restart
// serves what was pushed before, on the same port. It speaks plain HTTP
// and has no authentication: anyone on this machine can push to it.
type Registry struct {
	// Host is 127.0.0.1:<port>, as references name it.
	Host string

	handler http.Handler
	srv     *http.Server
	done    chan error

	log     io.Writer
	mu      sync.Mutex
	journal *os.File
}

// registryState is what <dir>/state.json remembers between starts.
type registryState struct {
	Port int `json:"port"`
}

// journalEntry is one manifest request the registry accepted.
type journalEntry struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	ContentType string `json:"contentType,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

// maxManifestBytes bounds a manifest the registry keeps (the registry
// itself refuses larger ones).
const maxManifestBytes = 4 << 20

// StartRegistry serves a registry from dir on 127.0.0.1:port; port 0
// reuses the port dir remembers, else picks a free one and remembers it.
// What it cannot keep for the next start is said on logw. It fails when dir's journal cannot be read or the port is taken, saying
// which.
func StartRegistry(dir string, port int, logw io.Writer) (*Registry, error) {
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		return nil, err
	}
	port, err := resolveRegistryPort(dir, port)
	if err != nil {
		return nil, err
	}
	r := &Registry{
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)),
			registry.WithBlobHandler(registry.NewDiskBlobHandler(filepath.Join(dir, "blobs")))),
		done: make(chan error, 1),
		log:  logw,
	}
	journal := filepath.Join(dir, "manifests.jsonl")
	if err := r.replay(journal); err != nil {
		return nil, fmt.Errorf("the registry's manifests %s: %w (remove %s to start an empty registry)", journal, err, dir)
	}
	if r.journal, err = os.OpenFile(journal, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", r.Host)
	if err != nil {
		r.journal.Close()
		return nil, fmt.Errorf("registry port %d is taken (is another annex dev running from %s? stop it, or choose another port): %w", port, filepath.Dir(dir), err)
	}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { r.done <- r.srv.Serve(l) }()
	return r, nil
}

// Stop closes the registry; what it stored stays in its folder.
func (r *Registry) Stop() error {
	err := r.srv.Close()
	if serveErr := <-r.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(err, r.journal.Close())
}

// ServeHTTP serves the registry, and journals each manifest put or
// delete it accepts.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !isManifestWrite(req) {
		r.handler.ServeHTTP(w, req)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxManifestBytes+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxManifestBytes {
		http.Error(w, fmt.Sprintf("manifest larger than %d bytes", maxManifestBytes), http.StatusRequestEntityTooLarge)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	rec := &statusWriter{ResponseWriter: w}
	// One write at a time, so the journal's order is the registry's.
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handler.ServeHTTP(rec, req)
	if rec.status/100 != 2 {
		return
	}
	line, err := json.Marshal(journalEntry{Method: req.Method, Path: req.URL.Path, ContentType: req.Header.Get("Content-Type"), Body: body})
	if err == nil {
		_, err = r.journal.Write(append(line, '\n'))
	}
	if err != nil {
		// The push succeeded but will not survive a restart: say so in
		// the log of annex dev rather than fail the client.
		fmt.Fprintf(r.log, "annex dev: registry: %s %s is served but not kept for the next start: %v\n", req.Method, req.URL.Path, err)
	}
}

// replay feeds the journal's requests to the registry, in order. A
// missing journal is an empty registry; a torn last line (annex dev
// killed while writing it) is dropped.
func (r *Registry) replay(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	for i, line := range lines {
		if len(line) == 0 {
			continue
		}
		var e journalEntry
		if err := json.Unmarshal(line, &e); err != nil {
			if i == len(lines)-1 {
				return nil
			}
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		req, err := http.NewRequest(e.Method, e.Path, bytes.NewReader(e.Body))
		if err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		if e.ContentType != "" {
			req.Header.Set("Content-Type", e.ContentType)
		}
		// What the registry refuses now (a manifest whose blobs were
		// removed by hand) is left out, as it would be refused if pushed.
		r.handler.ServeHTTP(discardResponse{header: http.Header{}}, req)
	}
	return nil
}

// isManifestWrite reports whether req puts or deletes a manifest
// (/v2/<name>/manifests/<reference>).
func isManifestWrite(req *http.Request) bool {
	if req.Method != http.MethodPut && req.Method != http.MethodDelete {
		return false
	}
	elems := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	return len(elems) >= 4 && elems[0] == "v2" && elems[len(elems)-2] == "manifests"
}

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// discardResponse is a ResponseWriter that keeps nothing.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header         { return d.header }
func (d discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d discardResponse) WriteHeader(int)             {}

// resolveRegistryPort returns want when set, else the port dir
// remembers, else a free port; whatever it returns is remembered.
func resolveRegistryPort(dir string, want int) (int, error) {
	path := filepath.Join(dir, "state.json")
	var st registryState
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &st); err != nil {
			return 0, fmt.Errorf("%s: %w (delete it to pick a new port)", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	port := want
	if port == 0 {
		port = st.Port
	}
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return 0, err
		}
	}
	if port == st.Port {
		return port, nil
	}
	data, err := json.Marshal(registryState{Port: port})
	if err != nil {
		return 0, err
	}
	return port, os.WriteFile(path, data, 0o600)
}
