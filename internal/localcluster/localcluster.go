// Package localcluster runs a real etcd and kube-apiserver as child processes
// on 127.0.0.1, keeping their state in one folder so a later start finds the
// same objects, credentials and port. `annex dev` runs on it, and tests use it
// where they must stop and restart the API server (envtest cannot).
//
// With Options.Workloads it also runs kube-controller-manager,
// kube-scheduler and kwok with a few fake nodes, so that Deployments become
// Available, Jobs complete and namespaces are finalized, without a kubelet,
// and a volume binder with a default StorageClass, so that
// PersistentVolumeClaims bind (storage.go). With Options.Images too, the
// containers of chosen images run as local processes (images.go). Without
// it nothing acts on the objects stored. StartRegistry serves the OCI
// registry of `annex dev` (registry.go).
package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// readyTimeout bounds how long Start waits for etcd, and then for
	// kube-apiserver, to answer their health checks.
	readyTimeout = 60 * time.Second
	// stopGrace is how long a process may take to exit after SIGTERM before
	// it is killed. kube-apiserver can drain for over 20 s; a dev cluster
	// does not need that courtesy.
	stopGrace = 10 * time.Second
	// logTailLines is how much of a process log a start error quotes.
	logTailLines = 20

	defaultServiceClusterIPRange = "10.96.0.0/16"
	serviceAccountIssuer         = "https://kubernetes.default.svc"
	stateFile                    = "ports.json"
	kubeconfigName               = "annex-local"
)

// Options configure a local cluster.
type Options struct {
	// Dir holds the cluster's state: etcd data, certificates, the admin
	// token, the chosen API port and the process logs (Dir/logs). It is
	// created when missing and reused when present, so a second start finds
	// the objects, credentials and port of the first.
	Dir string
	// BinDir is the folder holding the kube-apiserver and etcd binaries.
	BinDir string
	// APIPort is the kube-apiserver port. 0 reuses the port remembered in
	// Dir, or picks a free one the first time and remembers it, so a
	// kubeconfig written once keeps working across restarts.
	APIPort int
	// EtcdPort is etcd's client port; 0 picks a free one on every start.
	EtcdPort int
	// Log receives progress lines such as "kube-apiserver ready in 4.1s";
	// nil discards them. The processes' own output goes to Dir/logs.
	Log io.Writer
	// ServiceClusterIPRange is the range Service ClusterIPs are allocated
	// from; default 10.96.0.0/16 (a /24 holds only 254 Services).
	ServiceClusterIPRange string
	// Workloads also starts kube-controller-manager, kube-scheduler and
	// kwok from BinDir (with kwok's stages in BinDir/kwok-stages.yaml, as
	// hack/build-control-plane.sh builds them) and Nodes fake nodes, and
	// serves PersistentVolumeClaims of the default StorageClass "standard"
	// (or of class "") with volumes under Dir/volumes; see storage.go.
	Workloads bool
	// Nodes is how many fake nodes Workloads creates (default 3). They
	// carry the labels and node info a kubelet registers (nodes.go).
	Nodes int
	// NodeAllocatable is what each fake node offers the scheduler; a
	// resource it leaves out takes its value from
	// DefaultNodeAllocatable. A node kept from an earlier start is
	// updated to it.
	NodeAllocatable corev1.ResourceList
	// PodExecDir, when set with Workloads, makes the pods/exec subresource
	// (kubectl exec) work for the fake nodes' Pods, which have no
	// processes: kwok runs the command on this machine instead, in
	// PodExecDir, as the user running kwok, whatever Pod and container it
	// names. kwok's kubelet endpoint does not authenticate, so while the
	// cluster runs anyone who can reach its port on 127.0.0.1 can run
	// commands that way: for tests only.
	PodExecDir string
	// Images, with Workloads, are images whose containers run as
	// processes on this machine, as the Pod's ServiceAccount; see
	// images.go.
	Images []Image
}

// Cluster is a running etcd and kube-apiserver. Its methods are safe to call
// from several goroutines.
type Cluster struct {
	opts    Options // Dir absolute, defaults applied, APIPort resolved
	creds   credentials
	etcdURL string

	mu        sync.Mutex
	etcd      *child
	apiserver *child
	workloads []*child      // kube-controller-manager, kube-scheduler, kwok
	storage   *volumeBinder // with workloads; see storage.go
	images    *imageRunner  // with workloads and Options.Images; see images.go

	// kubeletPort is where kwok serves the fake nodes' kubelet API, when
	// Options.PodExecDir asks for exec; else 0.
	kubeletPort int
}

// Start starts etcd and then kube-apiserver from o.BinDir and returns once
// the API server's /readyz answers ok. Certificates, the service-account key
// and the admin token are created in o.Dir the first time and reused after.
//
// The processes run until Stop, independent of ctx, which bounds only the
// wait for readiness; they are killed if the calling process dies. When a
// process does not become ready within 60 s, or exits, Start stops whatever
// it started and returns an error quoting the end of that process's log.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Dir == "" || o.BinDir == "" {
		return nil, errors.New("localcluster: Options.Dir and Options.BinDir are required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	if o.Log == nil {
		o.Log = io.Discard
	}
	// The volume binder logs from its own goroutine.
	o.Log = &lockedWriter{w: o.Log}
	if o.ServiceClusterIPRange == "" {
		o.ServiceClusterIPRange = defaultServiceClusterIPRange
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	for _, sub := range []string{"logs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	creds, err := ensurePKI(dir, time.Now())
	if err != nil {
		return nil, err
	}
	if o.APIPort, err = resolveAPIPort(dir, o.APIPort); err != nil {
		return nil, err
	}
	c := &Cluster{opts: o, creds: creds}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.StartAPIServer(ctx, o.BinDir); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if o.Workloads {
		if err := c.startWorkloads(ctx); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	return c, nil
}

// RESTConfig returns a new client configuration for the cluster's admin, a
// token user in group system:masters, trusting the cluster's own CA.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.serverURL(),
		BearerToken:     c.creds.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.creds.caPEM...)},
	}
}

// WriteKubeconfig writes an admin kubeconfig for kubectl and client-go to
// path (mode 0600), with context, cluster and user named "annex-local". It
// stays valid across restarts on the same Dir.
func (c *Cluster) WriteKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[kubeconfigName] = &clientcmdapi.Cluster{
		Server:                   c.serverURL(),
		CertificateAuthorityData: c.creds.caPEM,
	}
	cfg.AuthInfos[kubeconfigName] = &clientcmdapi.AuthInfo{Token: c.creds.token}
	cfg.Contexts[kubeconfigName] = &clientcmdapi.Context{Cluster: kubeconfigName, AuthInfo: kubeconfigName}
	cfg.CurrentContext = kubeconfigName
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return os.Chmod(path, 0o600)
}

// Stop stops kwok, kube-scheduler, kube-controller-manager (when they
// run), kube-apiserver and then etcd, each with SIGTERM and, after 10 s,
// SIGKILL to its whole process group. It returns once all are gone. Calling
// it again, or on a partly stopped cluster, is harmless.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := errors.Join(c.stopWorkloadsLocked(), c.stopAPIServerLocked())
	if c.etcd != nil {
		err = errors.Join(err, c.etcd.stop(stopGrace))
		c.etcd = nil
		fmt.Fprintln(c.opts.Log, "etcd stopped")
	}
	return err
}

// StopAPIServer stops kube-apiserver and leaves etcd running, so that
// StartAPIServer can bring up another version on the same data.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopAPIServerLocked()
}

// StartAPIServer starts kube-apiserver from binDir (Options.BinDir when
// empty) against the running etcd, on the same port and with the same
// credentials, and returns when /readyz answers ok. It fails if an API server
// is already running or etcd is stopped.
func (c *Cluster) StartAPIServer(ctx context.Context, binDir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if binDir == "" {
		binDir = c.opts.BinDir
	}
	if c.apiserver != nil {
		return errors.New("localcluster: kube-apiserver is already running; call StopAPIServer first")
	}
	if c.etcd == nil {
		return errors.New("localcluster: etcd is not running; start the cluster with Start")
	}
	if err := checkPortFree(c.opts.APIPort); err != nil {
		return fmt.Errorf("kube-apiserver port %d is taken (is another cluster running from %s? stop it, or choose Options.APIPort): %w",
			c.opts.APIPort, c.opts.Dir, err)
	}
	pki := func(name string) string { return filepath.Join(c.opts.Dir, name) }
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The lease reconciler would publish 127.0.0.1 as the endpoint of the
		// "kubernetes" Service, which validation refuses; nothing in the
		// cluster needs that endpoint.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(c.opts.APIPort),
		"--cert-dir=" + pki("pki"),
		"--tls-cert-file=" + pki(servingCertFile),
		"--tls-private-key-file=" + pki(servingKeyFile),
		"--token-auth-file=" + pki(tokenFile),
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + pki(saPubFile),
		"--service-account-signing-key-file=" + pki(saKeyFile),
		"--service-cluster-ip-range=" + c.opts.ServiceClusterIPRange,
		"--allow-privileged=true",
		// kwok's nodes answer on 127.0.0.1 (their InternalIP); their
		// Hostname addresses resolve nowhere.
		"--kubelet-preferred-address-types=InternalIP",
		// No Service has a routable ClusterIP here: the API server calls
		// webhooks and APIServices through their Services' EndpointSlices,
		// which the image runner points at its processes (serving.go).
		"--enable-aggregator-routing=true",
	}
	fmt.Fprintf(c.opts.Log, "starting kube-apiserver on %s...\n", c.serverURL())
	p, err := startChild("kube-apiserver", filepath.Join(binDir, "kube-apiserver"), args,
		filepath.Join(c.opts.Dir, "logs", "kube-apiserver.log"))
	if err != nil {
		return err
	}
	check, err := c.readyzCheck()
	if err != nil {
		return errors.Join(err, p.stop(stopGrace))
	}
	took, err := waitReady(ctx, p, check)
	if err != nil {
		return errors.Join(err, p.stop(stopGrace))
	}
	c.apiserver = p
	fmt.Fprintf(c.opts.Log, "kube-apiserver ready in %.1fs\n", took.Seconds())
	return nil
}

func (c *Cluster) stopAPIServerLocked() error {
	if c.apiserver == nil {
		return nil
	}
	err := c.apiserver.stop(stopGrace)
	c.apiserver = nil
	fmt.Fprintln(c.opts.Log, "kube-apiserver stopped")
	return err
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	clientPort := c.opts.EtcdPort
	if clientPort == 0 {
		var err error
		if clientPort, err = freePort(); err != nil {
			return err
		}
	}
	peerPort, err := freePort()
	if err != nil {
		return err
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	// The initial-* flags matter only on the first start; later starts read
	// the membership from the data dir. fsync stays on: this is a cluster
	// people keep their work in.
	args := []string{
		"--name=annex",
		"--data-dir=" + filepath.Join(c.opts.Dir, "etcd"),
		"--listen-client-urls=" + c.etcdURL,
		"--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=annex=" + peerURL,
	}
	fmt.Fprintf(c.opts.Log, "starting etcd on %s...\n", c.etcdURL)
	p, err := startChild("etcd", filepath.Join(c.opts.BinDir, "etcd"), args,
		filepath.Join(c.opts.Dir, "logs", "etcd.log"))
	if err != nil {
		return err
	}
	took, err := waitReady(ctx, p, etcdHealthCheck(c.etcdURL))
	if err != nil {
		return errors.Join(err, p.stop(stopGrace))
	}
	c.mu.Lock()
	c.etcd = p
	c.mu.Unlock()
	fmt.Fprintf(c.opts.Log, "etcd ready in %.1fs\n", took.Seconds())
	return nil
}

func (c *Cluster) serverURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.opts.APIPort)
}

// readyzCheck returns a check that passes when kube-apiserver's /readyz
// answers 200 to the admin.
func (c *Cluster) readyzCheck() (func(context.Context) error, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.creds.caPEM) {
		return nil, fmt.Errorf("CA certificate in %s is not PEM", filepath.Join(c.opts.Dir, caCertFile))
	}
	hc := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	url := c.serverURL() + "/readyz"
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.creds.token)
		return expectOK(hc.Do(req))
	}, nil
}

// etcdHealthCheck passes when etcd's /health reports a healthy member.
func etcdHealthCheck(etcdURL string) func(context.Context) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, etcdURL+"/health", nil)
		if err != nil {
			return err
		}
		return expectOK(hc.Do(req))
	}
}

func expectOK(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// waitReady polls check until it passes, p exits, ctx ends or readyTimeout
// passes, and returns how long it took. Errors quote the end of p's log.
func waitReady(ctx context.Context, p *child, check func(context.Context) error) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = check(ctx); last == nil {
			return time.Since(start), nil
		}
		select {
		case <-p.done:
			return 0, fmt.Errorf("%s exited before it was ready (%v); end of %s:\n%s", p.name, p.err, p.logPath, p.tail(logTailLines))
		case <-ctx.Done():
			return 0, fmt.Errorf("%s not ready after %s (last check: %v); end of %s:\n%s",
				p.name, time.Since(start).Round(time.Second), last, p.logPath, p.tail(logTailLines))
		case <-tick.C:
		}
	}
}

// portState is what Dir remembers between starts.
type portState struct {
	APIPort int `json:"apiPort"`
}

// resolveAPIPort returns want when set, else the port remembered in dir,
// else a free port; whatever it returns is remembered for the next start.
func resolveAPIPort(dir string, want int) (int, error) {
	path := filepath.Join(dir, stateFile)
	var st portState
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &st); err != nil {
			return 0, fmt.Errorf("%s: %w (delete it to pick a new port)", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	port := want
	if port == 0 {
		port = st.APIPort
	}
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return 0, err
		}
	}
	if port == st.APIPort {
		return port, nil
	}
	data, err := json.Marshal(portState{APIPort: port})
	if err != nil {
		return 0, err
	}
	return port, os.WriteFile(path, data, 0o600)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func checkPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}
