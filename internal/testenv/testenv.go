// Package testenv starts a real etcd and kube-apiserver for integration
// tests, with the Annex CRDs installed. It uses controller-runtime's envtest
// with the binaries `make envtest-assets` builds from source into
// bin/k8s/<version>; nothing is downloaded.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	annexv1alpha1 "github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/config/admission"
)

const (
	modulePath = "github.com/annex-platform/annex"
	// serviceClusterIPRange replaces envtest's /24, which holds only 254
	// Services with a ClusterIP.
	serviceClusterIPRange = "10.96.0.0/16"
	missingBinariesHint   = "run `make envtest-assets` (builds the control plane and kwok into bin/, about 15 min once)"
)

// Env is a running API server with the Annex CRDs installed.
type Env struct {
	// Config authenticates as an admin in group system:masters.
	Config *rest.Config
	// Client uses Scheme.
	Client client.Client
	// Scheme knows the client-go kinds, apiextensions/v1 and annex.dev/v1alpha1.
	Scheme *runtime.Scheme

	env *envtest.Environment
}

// RepoRoot returns the root of the Annex repository: the nearest folder at or
// above the working directory whose go.mod declares module
// github.com/annex-platform/annex.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modfile.ModulePath(data) == modulePath {
			return dir, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s at or above the working directory; run the tests from inside the repository", modulePath)
		}
		dir = parent
	}
}

// KubeVersion returns the Kubernetes version the binaries are built from:
// the k8s.io/kubernetes requirement of hack/tools/go.mod, without the "v".
func KubeVersion() (string, error) { return kubeVersionOf(filepath.Join("hack", "tools")) }

// PreviousKubeVersion returns the older Kubernetes version built from
// hack/tools/kube-1.36, for tests that upgrade a cluster.
func PreviousKubeVersion() (string, error) {
	return kubeVersionOf(filepath.Join("hack", "tools", "kube-1.36"))
}

// RequirePreviousBinDir returns the folder of the older kube-apiserver (and
// etcd), failing the test with how to build them when they are missing.
func RequirePreviousBinDir(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err == nil {
		var version string
		if version, err = PreviousKubeVersion(); err == nil {
			dir := filepath.Join(root, "bin", "k8s", version)
			if err = binariesIn(dir); err == nil {
				return dir
			}
		}
	}
	t.Fatal(err)
	return ""
}

func kubeVersionOf(module string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, module, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/kubernetes" {
			return strings.TrimPrefix(r.Mod.Version, "v"), nil
		}
	}
	return "", fmt.Errorf("%s: no requirement on k8s.io/kubernetes; it pins the version the control plane is built from", path)
}

// BinDir returns <repo root>/bin/k8s/<version>, where kube-apiserver and etcd
// of the pinned Kubernetes version are built. It does not check that they
// are there.
func BinDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	version, err := KubeVersion()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "k8s", version), nil
}

// RequireBinDir returns BinDir, failing the test with how to build the
// binaries when kube-apiserver or etcd is missing. It never skips.
func RequireBinDir(t testing.TB) string {
	t.Helper()
	dir, err := readyBinDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// RequireWorkloadsBinDir is RequireBinDir for a cluster that runs
// workloads: it also needs kube-controller-manager, kube-scheduler, kwok
// and kwok's stages, which hack/build-control-plane.sh builds for the
// pinned version.
func RequireWorkloadsBinDir(t testing.TB) string {
	t.Helper()
	dir := RequireBinDir(t)
	RequireWorkloadsBinDirAt(t, dir)
	return dir
}

// RequireWorkloadsBinDirAt fails the test unless dir holds a control plane
// that runs workloads.
func RequireWorkloadsBinDirAt(t testing.TB, dir string) {
	t.Helper()
	for _, name := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s is missing: %s", filepath.Join(dir, name), missingBinariesHint)
		}
	}
}

func readyBinDir() (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	return dir, binariesIn(dir)
}

func binariesIn(dir string) error {
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("%s is missing: %s", filepath.Join(dir, name), missingBinariesHint)
		}
	}
	return nil
}

// Start starts etcd and kube-apiserver, installs the CRDs of config/crd/bases
// and the admission policies of config/admission, and stops everything
// when the test ends. It fails the test, never skips it, when the
// binaries are missing or the control plane does not start.
func Start(t testing.TB) *Env {
	t.Helper()
	env, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop test API server: %v", err)
		}
	})
	return env
}

// StartShared starts an Env for a whole package, typically from TestMain,
// and returns the function that stops it.
func StartShared() (*Env, func(), error) {
	env, err := start()
	if err != nil {
		return nil, nil, err
	}
	stop := func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stop test API server: %v\n", err)
		}
	}
	return env, stop, nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (e *Env) Stop() error {
	return e.env.Stop()
}

func start() (*Env, error) {
	binDir, err := readyBinDir()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	// envtest gives each process 20 s to become ready, then retries: on a
	// shared 2-core machine under load an API server that loads Annex's
	// CRDs can take longer, and every retry costs the same again. A slow
	// start is not what the tests test. KUBEBUILDER_CONTROLPLANE_START_TIMEOUT,
	// when set, is envtest's to read.
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		te.ControlPlaneStartTimeout = 90 * time.Second
	}
	te.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", serviceClusterIPRange)
	// No Service of this cluster has a routable ClusterIP: with aggregator
	// routing the API server calls a webhook's Service through its
	// EndpointSlices instead, so a test can point one (an FQDN slice of
	// address 127.0.0.1: IP slices refuse loopback addresses) at a server
	// it runs on 127.0.0.1.
	te.ControlPlane.GetAPIServer().Configure().Set("enable-aggregator-routing", "true")
	cfg, err := te.Start()
	if err != nil {
		// Start may fail after etcd or the API server came up.
		return nil, errors.Join(fmt.Errorf("start test API server from %s: %w", binDir, err), te.Stop())
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	if err := admission.Install(context.Background(), c, time.Minute); err != nil {
		return nil, errors.Join(err, te.Stop())
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, env: te}, nil
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		annexv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// WriteKubeconfig writes an admin kubeconfig (group system:masters) for the
// test API server to path, for tests that run Annex as a subprocess.
func (e *Env) WriteKubeconfig(path string) error {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: "annex-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Eventually calls f every 200 ms until it returns nil, and fails the test
// with f's last error when timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
