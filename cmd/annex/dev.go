package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog/builtin"
	"github.com/annex-platform/annex/internal/exampleoperator"
	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/scheme"
)

// devOptions configure `annex dev`.
type devOptions struct {
	dir     string
	binDir  string
	apiPort int
	// registryPort is the dev registry's port: 0 picks one once and keeps
	// it, -1 runs no registry.
	registryPort int
	metricsAddr  string
	nodes        int
	// nodeCPU, nodeMemory and nodePods are each fake node's allocatable
	// resources, as Kubernetes quantities.
	nodeCPU, nodeMemory, nodePods string
	clusters                      string
	// exampleOperator is the binary that runs the Pods of the built-in
	// example operator's image.
	exampleOperator string
}

func newDevCommand() *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local control plane, the Annex manager and the built-in catalog, until Ctrl-C",
		Long: `dev starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
kwok (with --nodes fake nodes, so that Deployments become Available and Jobs
complete without a kubelet) from --bin-dir with their state in --dir. The
fake nodes carry the labels a kubelet sets (kubernetes.io/os=linux,
kubernetes.io/arch, hostname, instance type, zones local-a/b/c of region
local) and offer --node-cpu, --node-memory and --node-pods; they run no
containers. It runs the
Pods of the built-in example operator's image as local processes
(--example-operator) and publishes the ports they listen on as endpoints of
the Services selecting their Pods, so the API server reaches their webhooks;
no other Service has endpoints. It installs
the Annex CRDs, creates the Catalog "builtin", runs the manager in this process
and writes an admin kubeconfig to <dir>/kubeconfig. It serves an OCI registry
on 127.0.0.1 (plain HTTP, no authentication; --registry-port) for packages and
charts of your own, with its data in <dir>/registry and its address
(127.0.0.1:PORT) in <dir>/registry-address: push with annexctl package push
... --plain-http, add an oci:// catalog of it. Ctrl-C or SIGTERM stops
everything; the next run finds the same state, the registry's content too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logVersion("dev")
			return runDev(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".annex/dev", "state of the local control plane (etcd data, certificates, logs, kubeconfig)")
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "", "folder with the control-plane binaries and kwok (make run passes bin/k8s/<version>)")
	cmd.Flags().IntVar(&o.nodes, "nodes", 3, "how many fake nodes kwok runs pods on, in each cluster")
	def := localcluster.DefaultNodeAllocatable()
	cmd.Flags().StringVar(&o.nodeCPU, "node-cpu", def.Cpu().String(), "CPUs each fake node offers the scheduler (allocatable cpu)")
	cmd.Flags().StringVar(&o.nodeMemory, "node-memory", def.Memory().String(), "memory each fake node offers the scheduler (allocatable memory)")
	cmd.Flags().StringVar(&o.nodePods, "node-pods", def.Pods().String(), "how many Pods each fake node takes (allocatable pods)")
	cmd.Flags().StringVar(&o.clusters, "clusters", "", "also start managed clusters and register them as ManagedClusters: a number N "+
		"(cluster-1…N, alternating between the hub's Kubernetes version and the newest other one built in bin/k8s), or name=version,… (e.g. edge-1=1.37.1,edge-2=1.36.4)")
	cmd.Flags().IntVar(&o.apiPort, "api-port", 0, "kube-apiserver port on 127.0.0.1; 0 picks a free one once and keeps it")
	cmd.Flags().IntVar(&o.registryPort, "registry-port", 0, "the OCI registry's port on 127.0.0.1; 0 picks a free one once and keeps it, -1 runs no registry")
	cmd.Flags().StringVar(&o.metricsAddr, "metrics-bind-address", "0", `address of the manager's metrics endpoint; "0" turns it off`)
	cmd.Flags().StringVar(&o.exampleOperator, "example-operator", defaultExampleOperator(),
		"the example-operator binary (make builds it next to annex); it runs every Pod of the image "+exampleoperator.Image+":<version> as a local process, as the Pod's ServiceAccount")
	return cmd
}

// defaultExampleOperator is example-operator next to this program.
func defaultExampleOperator() string {
	self, err := os.Executable()
	if err != nil {
		return "example-operator"
	}
	return filepath.Join(filepath.Dir(self), "example-operator")
}

func runDev(ctx context.Context, o devOptions, out io.Writer) (err error) {
	if o.binDir == "" {
		return errors.New("--bin-dir is required: the folder holding kube-apiserver and etcd (`make run` passes it)")
	}
	for _, bin := range []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"} {
		if _, statErr := os.Stat(filepath.Join(o.binDir, bin)); statErr != nil {
			return fmt.Errorf("--bin-dir %s has no %s: run `make envtest-assets` to build it (about 15 minutes the first time, once)", o.binDir, bin)
		}
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	allocatable, err := nodeAllocatable(o.nodeCPU, o.nodeMemory, o.nodePods)
	if err != nil {
		return err
	}
	images := exampleOperatorImage(o.exampleOperator, out)
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Dir: dir, BinDir: o.binDir, APIPort: o.apiPort, Log: out, Workloads: true,
		Nodes: o.nodes, NodeAllocatable: allocatable, Images: images,
	})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "annex dev: stopping the control plane...")
		err = errors.Join(err, cluster.Stop())
		fmt.Fprintln(out, "annex dev: stopped")
	}()

	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := cluster.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	registryHost, stopRegistry, err := startDevRegistry(dir, o.registryPort, out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopRegistry()) }()
	cfg := cluster.RESTConfig()
	if err := manager.InstallCRDs(ctx, cfg, time.Minute); err != nil {
		return err
	}
	if err := ensureBuiltinCatalog(ctx, cfg); err != nil {
		return err
	}
	binRoot := filepath.Dir(filepath.Clean(o.binDir))
	clusters, err := parseDevClusters(o.clusters, filepath.Base(filepath.Clean(o.binDir)), binRoot)
	if err != nil {
		return err
	}
	managed, startErr := startDevClusters(ctx, cfg, clusters, dir, binRoot, o.nodes, allocatable, images, out)
	defer func() {
		if len(managed) > 0 {
			fmt.Fprintln(out, "annex dev: stopping the managed clusters...")
			err = errors.Join(err, stopDevClusters(managed))
		}
	}()
	if startErr != nil {
		return startErr
	}
	mgr, err := manager.New(cfg, manager.Options{MetricsAddr: o.metricsAddr, CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	// "Annex is running" promises a tour that starts with the built-in
	// catalog's Extensions: say it once they are there.
	if err := waitBuiltinCatalog(ctx, cfg, stopped, out); err != nil {
		cancel()
		if mgrErr := <-stopped; mgrErr != nil && !errors.Is(mgrErr, context.Canceled) {
			return errors.Join(err, mgrErr)
		}
		return err
	}
	printNextSteps(out, kubeconfig, registryHost, clusters)
	if err := <-stopped; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// nodeAllocatable reads --node-cpu, --node-memory and --node-pods.
func nodeAllocatable(cpu, memory, pods string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, f := range []struct {
		flag, value string
		name        corev1.ResourceName
	}{{"--node-cpu", cpu, corev1.ResourceCPU}, {"--node-memory", memory, corev1.ResourceMemory}, {"--node-pods", pods, corev1.ResourcePods}} {
		q, err := resource.ParseQuantity(f.value)
		if err != nil || q.Sign() <= 0 {
			example := localcluster.DefaultNodeAllocatable()[f.name]
			return nil, fmt.Errorf("%s %q: want a positive Kubernetes quantity, such as %s", f.flag, f.value, example.String())
		}
		out[f.name] = q
	}
	return out, nil
}

// builtinCatalogTimeout bounds the wait for the built-in catalog's first
// sync, which reads only what is compiled into annex and takes a second.
const builtinCatalogTimeout = 2 * time.Minute

// waitBuiltinCatalog waits until the Catalog "builtin" has synced (see
// builtinCatalogSynced) or is suspended. It fails when the manager stops
// first (its error is then received from stopped by the caller), when ctx
// ends, or after builtinCatalogTimeout, quoting the catalog's Ready
// condition.
func waitBuiltinCatalog(ctx context.Context, cfg *rest.Config, stopped <-chan error, out io.Writer) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	index, err := builtin.Index(builtinCatalog)
	if err != nil {
		return err
	}
	deadline := time.NewTimer(builtinCatalogTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	why := "not read yet"
	for {
		cat := &v1alpha1.Catalog{}
		if err := c.Get(ctx, client.ObjectKey{Name: builtinCatalog}, cat); err != nil {
			why = err.Error()
		} else {
			var done bool
			if done, why = builtinCatalogSynced(cat, index.Digest); done {
				if why != "" {
					fmt.Fprintf(out, "annex dev: %s\n", why)
				}
				return nil
			}
		}
		select {
		case <-stopped:
			return errors.New("the manager stopped before the built-in catalog synced")
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("Catalog %s did not sync within %s: %s; see the manager's log above", builtinCatalog, builtinCatalogTimeout, why)
		case <-tick.C:
		}
	}
}

// builtinCatalogSynced reports whether cat, the Catalog "builtin", offers
// the Extensions of this annex: Ready for its current generation, and,
// while it has a builtin source, made from the index of digest (a state
// kept from an older annex is not). A suspended catalog is done too, with
// a note saying so; otherwise the text says what is awaited.
func builtinCatalogSynced(cat *v1alpha1.Catalog, digest string) (bool, string) {
	if cat.Spec.Suspend {
		return true, fmt.Sprintf("Catalog %s is suspended (spec.suspend): its Extensions are those of its last sync", cat.Name)
	}
	ready := meta.FindStatusCondition(cat.Status.Conditions, v1alpha1.ConditionReady)
	switch {
	case ready == nil || cat.Status.ObservedGeneration != cat.Generation:
		return false, "not synced yet"
	case ready.Status != metav1.ConditionTrue:
		return false, fmt.Sprintf("Ready is %s: %s", ready.Status, ready.Message)
	case cat.Spec.Source.Builtin != nil && cat.Status.ArtifactDigest != digest:
		return false, "its Extensions are those of another annex build; syncing"
	}
	return true, ""
}

// exampleOperatorImage runs the Pods of the example operator's image as
// bin/example-operator with the image's tag as its version: kwok's fake
// nodes run no containers, and this is what the image would contain. A
// missing binary is said once; its Pods then stay without a process.
func exampleOperatorImage(binary string, out io.Writer) []localcluster.Image {
	if _, err := os.Stat(binary); err != nil {
		fmt.Fprintf(out, "annex dev: %s is missing (make example-operator builds it); Pods of %s will not run\n", binary, exampleoperator.Image)
	}
	return []localcluster.Image{{
		Repository: exampleoperator.Image,
		Command:    func(tag string) []string { return []string{binary, "--version=" + tag} },
		Local:      exampleOperatorLocal,
	}}
}

// exampleOperatorLocal points the example operator's webhook server (from
// 0.4.0) at what the image runner gives its process instead of the Pod's
// fixed places: the folder of the serving certificate's Secret volume and
// a port on 127.0.0.1, which the runner publishes as the endpoint of the
// webhook's Service.
// Versions without the port (before 0.4.0) get no arguments.
func exampleOperatorLocal(l localcluster.Local) []string {
	port, ok := l.Ports[exampleoperator.WebhookPort]
	if !ok {
		return nil
	}
	args := []string{"--webhook-host=127.0.0.1", "--webhook-port=" + strconv.Itoa(port)}
	if dir, ok := l.Dirs[exampleoperator.WebhookCertDir]; ok {
		args = append(args, "--webhook-cert-dir="+dir)
	}
	return args
}

// builtinCatalog is the name of the Catalog annex dev creates.
const builtinCatalog = "builtin"

// ensureBuiltinCatalog creates the Catalog "builtin" unless it exists (a
// user may have changed or suspended it; that is kept).
func ensureBuiltinCatalog(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: builtinCatalog},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}}},
	}
	if err := c.Create(ctx, cat); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Catalog %s: %w", builtinCatalog, err)
	}
	return nil
}

// registryAddressFile, in annex dev's folder, holds the dev registry's
// 127.0.0.1:PORT (and nothing while it runs none), for scripts and guides:
// export REGISTRY=$(cat .annex/dev/registry-address).
const registryAddressFile = "registry-address"

// startDevRegistry starts the OCI registry of annex dev in <dir>/registry
// and writes its address to <dir>/registry-address; port -1 starts none
// and removes the file. It returns the registry's host ("" without) and
// how to stop it.
func startDevRegistry(dir string, port int, out io.Writer) (string, func() error, error) {
	addressFile := filepath.Join(dir, registryAddressFile)
	if port < 0 {
		if err := os.Remove(addressFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", nil, err
		}
		return "", func() error { return nil }, nil
	}
	reg, err := localcluster.StartRegistry(filepath.Join(dir, "registry"), port, out)
	if err != nil {
		return "", nil, fmt.Errorf("annex dev's OCI registry: %w (--registry-port -1 runs none)", err)
	}
	if err := os.WriteFile(addressFile, []byte(reg.Host+"\n"), 0o644); err != nil {
		return "", nil, errors.Join(err, reg.Stop())
	}
	fmt.Fprintf(out, "annex dev: OCI registry on %s (plain HTTP, this machine only; address in %s)\n", reg.Host, addressFile)
	return reg.Host, reg.Stop, nil
}

func printNextSteps(out io.Writer, kubeconfig, registryHost string, clusters []devCluster) {
	if len(clusters) > 0 {
		fmt.Fprintln(out, "\nManaged clusters (kubectl get managedclusters):")
		for _, c := range clusters {
			fmt.Fprintf(out, "  %-12s Kubernetes %s\n", c.name, c.version)
		}
	}
	fmt.Fprintf(out, `
Annex is running: a local control plane with fake nodes where pods run, the Annex
manager and the built-in catalog.
In another shell, from this folder:

  export KUBECONFIG=%s
  kubectl get catalogs,extensions
  kubectl apply -f config/samples/hello.yaml
  kubectl wait --for=condition=Ready extensioninstallation --all -n default --timeout=2m
  kubectl get extensioninstallations,configmaps,greetings -n default

  # An operator from the built-in OLM catalog (runs as bin/example-operator):
  kubectl apply -f config/samples/example-operator.yaml
%s
Stop with Ctrl-C; the next run finds the same state.
`, kubeconfig, registrySteps(registryHost))
}

// registrySteps is what printNextSteps says of the dev registry at host
// ("" when it runs none).
func registrySteps(host string) string {
	if host == "" {
		return ""
	}
	return fmt.Sprintf(`
  # Your own packages, signed, in the OCI registry on %s (docs/guides/signing.md):
  annexctl package push DIR oci://%s/packages --plain-http --sign-key KEY
`, host, host)
}
