// Package console is Annex's web console: server-rendered HTML over the
// same client library as annexctl (internal/cli), with the user's own
// kubeconfig. Every read and every action is the user's: the API server
// applies their RBAC, and nothing runs with the manager's rights.
//
// The list pages read from informers (one LIST and one WATCH per kind, as
// the user), never one GET per object; a change the informers see is
// pushed to open pages as a server-sent event, and a few lines of
// JavaScript swap in the page's new content. Without JavaScript every
// page and every action (install, approve) still works: actions are
// plain POST forms carrying a per-server CSRF token.
package console

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply"
	"github.com/annex-platform/annex/internal/cli"
)

// Options configure a console Server.
type Options struct {
	// Address is the host:port the console is served on. Requests must
	// name it, or a loopback name, in their Host header: a web page
	// elsewhere cannot reach the console through a DNS name of its own.
	Address string
	// LiveInterval is the least time between two live updates of a page
	// (default 500 ms).
	LiveInterval time.Duration
	// SyncTimeout bounds how long New waits for the informers' first
	// LIST (default 1 minute).
	SyncTimeout time.Duration
	// ValuesWait bounds how long an extension's page waits for the
	// manager to read the values of a version it has not read yet
	// (default 10 s; negative: the page does not ask).
	ValuesWait time.Duration
}

// Server serves the console. It is an http.Handler.
type Server struct {
	// client reads the watched kinds from the informers and the rest
	// (events) from the API server, and writes to the API server; always
	// as the user.
	client client.Client
	// direct reads from and writes to the API server, never the
	// informers: actions that update what they read (rollout undo's
	// optimistic lock) start from the latest version.
	direct    client.Client
	discovery discovery.ServerVersionInterface
	// applier reads the health of hub objects, as the user.
	applier *apply.Applier
	user    string
	csrf    string
	address string
	live    *notifier
	pages   pages
	flashes flashes
	mux     *http.ServeMux
	hub     hubVersion
	// valuesWait is Options.ValuesWait.
	valuesWait time.Duration
}

// New connects to the API server cfg names, as its user, starts the
// informers of the watched kinds the user may list and watch, and waits
// until they have synced. The informers stop when ctx ends. Errors: the
// API server is unreachable, or the informers did not sync in time.
func New(ctx context.Context, cfg *rest.Config, o Options) (*Server, error) {
	if o.LiveInterval <= 0 {
		o.LiveInterval = 500 * time.Millisecond
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = time.Minute
	}
	if o.ValuesWait == 0 {
		o.ValuesWait = 10 * time.Second
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server %s: %w", cfg.Host, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	s := &Server{
		direct: direct, discovery: disc, csrf: hex.EncodeToString(token), address: o.Address,
		live: newNotifier(o.LiveInterval), flashes: flashes{m: map[string]flash{}}, valuesWait: o.ValuesWait,
	}
	if s.applier, err = apply.New(cfg); err != nil {
		return nil, err
	}
	s.user = cli.WhoAmI(ctx, direct)
	if s.user == "" {
		s.user = "(unknown user)"
	}
	cached, err := startCache(ctx, cfg, scheme, direct, s.user, s.live.changed, o.SyncTimeout)
	if err != nil {
		return nil, err
	}
	s.client, err = client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: cached}})
	if err != nil {
		return nil, err
	}
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.Handle("GET /static/", http.FileServerFS(staticFS))
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/catalog", http.StatusSeeOther)
	})
	m.HandleFunc("GET /live", func(w http.ResponseWriter, r *http.Request) { s.live.serveEvents(w, r, 15*time.Second) })
	m.HandleFunc("GET /catalog", s.catalogPage)
	m.HandleFunc("GET /catalog/{name}", s.extensionPage)
	m.HandleFunc("POST /catalog/{name}/install", s.install)
	m.HandleFunc("GET /clusters", s.clustersPage)
	m.HandleFunc("GET /installations", s.installationsPage)
	m.HandleFunc("GET /installations/{namespace}/{name}", s.installationPage)
	m.HandleFunc("GET /approvals", s.approvalsPage)
	m.HandleFunc("POST /approvals/{namespace}/{name}", s.approve)
	m.HandleFunc("GET /rollouts", s.rolloutsPage)
	m.HandleFunc("GET /rollouts/{profile}", s.rolloutPage)
	m.HandleFunc("POST /rollouts/{profile}/{action}", s.rolloutAction)
	s.mux = m
}

// ServeHTTP refuses requests whose Host is not the console's (DNS
// rebinding) and POSTs without the CSRF token or from another site, sets
// headers that keep the pages from being framed or running scripts of
// other origins, and serves the page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("host %q is not this console's address; open it as http://%s", r.Host, s.address), http.StatusMisdirectedRequest)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if r.Method == http.MethodPost {
		if err := http.NewCrossOriginProtection().Check(r); err != nil {
			http.Error(w, "cross-site request refused: "+err.Error(), http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
			http.Error(w, "the form's CSRF token is missing or not this console's (was the console restarted?): reload the page and submit it again", http.StatusForbidden)
			return
		}
	}
	// The change number before anything is read: a change that lands
	// while the page is read makes the page older than its number.
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), startSeqKey{}, s.live.current(""))))
}

// startSeqKey holds, in a request's context, the notifier's change
// number when the request began.
type startSeqKey struct{}

// pageSeq is the change number a page rendered for r reflects: its
// object's (or every object's) current number, unless that moved after
// the request began — then the data read may predate the change, and
// the request's start number (lower) makes the live script fetch the
// page again.
func (s *Server) pageSeq(r *http.Request, key string) uint64 {
	seq := s.live.current(key)
	if start, ok := r.Context().Value(startSeqKey{}).(uint64); ok && start < seq {
		return start
	}
	return seq
}

// hostAllowed accepts loopback names, the console's own host, and, when
// it listens on every address (0.0.0.0, ::), any IP address; on any
// port. A DNS name other than localhost is refused: that is how a page
// elsewhere would reach the console (DNS rebinding).
func (s *Server) hostAllowed(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || host == "127.0.0.1" || host == "::1" {
		return true
	}
	own, _, err := net.SplitHostPort(s.address)
	if err != nil || own == "" {
		return false
	}
	if host == own {
		return true
	}
	ownIP := net.ParseIP(own)
	return ownIP != nil && ownIP.IsUnspecified() && net.ParseIP(host) != nil
}

// hubVersion caches the hub's Kubernetes version for a minute.
type hubVersion struct {
	mu      sync.Mutex
	version string
	err     error
	at      time.Time
}

// hubKubeVersion is the Kubernetes version of the cluster the kubeconfig
// names (one discovery request a minute at most).
func (s *Server) hubKubeVersion() (string, error) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if time.Since(s.hub.at) < time.Minute {
		return s.hub.version, s.hub.err
	}
	v, err := s.discovery.ServerVersion()
	s.hub.at, s.hub.err = time.Now(), err
	if err == nil {
		s.hub.version = v.GitVersion
	}
	return s.hub.version, s.hub.err
}

// flash is a message shown once on the page an action redirects to.
type flash struct {
	Text  string
	Error bool
	at    time.Time
}

// flashes holds messages between a POST and the GET it redirects to,
// under random ids: the message's text never travels in a URL. A message
// stays for flashLife, so that the live updates of the page it is shown
// on (which fetch the same URL) keep it.
type flashes struct {
	mu sync.Mutex
	m  map[string]flash
}

const flashLife = 5 * time.Minute

func (f *flashes) put(text string, isError bool) string {
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	key := hex.EncodeToString(id)
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, v := range f.m {
		if time.Since(v.at) > flashLife {
			delete(f.m, k)
		}
	}
	f.m[key] = flash{Text: text, Error: isError, at: time.Now()}
	return key
}

func (f *flashes) get(key string) *flash {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[key]
	if !ok || time.Since(v.at) > flashLife {
		return nil
	}
	return &v
}

// redirect sends the browser to path with a flash message (303, so the
// browser GETs it).
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, path, message string, isError bool) {
	if message != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "flash=" + s.flashes.put(message, isError)
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// render writes a page, or only its <main> content when the page's
// script asks for a live update (header X-Console-Fragment), with the
// change number it reflects in X-Console-Seq. A template error becomes a
// 500 with the error, not half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p *page) {
	p.User, p.CSRF, p.Seq, p.Now = s.user, s.csrf, s.pageSeq(r, p.LiveKey), time.Now()
	if key := r.URL.Query().Get("flash"); key != "" && p.Flash == nil {
		p.Flash = s.flashes.get(key)
	}
	tmpl := "layout"
	if r.Header.Get("X-Console-Fragment") == "main" {
		tmpl = "main"
	}
	var buf bytes.Buffer
	if err := s.pages.execute(&buf, name, tmpl, p); err != nil {
		http.Error(w, fmt.Sprintf("rendering page %s: %v", name, err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Console-Seq", fmt.Sprint(p.Seq))
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// fail renders the error page: not found, forbidden (the user's RBAC),
// or anything else the API server said.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, title string, err error) {
	status := http.StatusInternalServerError
	var nf notFound
	var denied deniedError
	switch {
	case apierrors.IsNotFound(err), errors.As(err, &nf):
		status = http.StatusNotFound
	case apierrors.IsForbidden(err), errors.As(err, &denied):
		status = http.StatusForbidden
	case errors.Is(err, context.DeadlineExceeded):
		status = http.StatusGatewayTimeout
	}
	s.render(w, r, status, "error", &page{Title: title, Data: err.Error()})
}

// notFound is a page that does not exist, with what to do instead.
type notFound string

func (e notFound) Error() string { return string(e) }
