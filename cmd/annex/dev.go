package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/exampleoperator"
	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/manager"
)

// devOptions configure `annex dev`.
type devOptions struct {
	dir         string
	binDir      string
	apiPort     int
	metricsAddr string
	nodes       int
	clusters    string
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
complete without a kubelet) from --bin-dir with their state in --dir, runs the
Pods of the built-in example operator's image as local processes
(--example-operator), installs
the Annex CRDs, creates the Catalog "builtin", runs the manager in this process
and writes an admin kubeconfig to <dir>/kubeconfig. Ctrl-C or SIGTERM stops
everything; the next run finds the same state.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logVersion("dev")
			return runDev(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".annex/dev", "state of the local control plane (etcd data, certificates, logs, kubeconfig)")
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "", "folder with the control-plane binaries and kwok (make run passes bin/k8s/<version>)")
	cmd.Flags().IntVar(&o.nodes, "nodes", 3, "how many fake nodes kwok runs pods on, in each cluster")
	cmd.Flags().StringVar(&o.clusters, "clusters", "", "also start managed clusters and register them as ManagedClusters: a number N "+
		"(cluster-1…N, alternating between the hub's Kubernetes version and the newest other one built in bin/k8s), or name=version,… (e.g. edge-1=1.37.1,edge-2=1.36.4)")
	cmd.Flags().IntVar(&o.apiPort, "api-port", 0, "kube-apiserver port on 127.0.0.1; 0 picks a free one once and keeps it")
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
	images := exampleOperatorImage(o.exampleOperator, out)
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Dir: dir, BinDir: o.binDir, APIPort: o.apiPort, Log: out, Workloads: true, Nodes: o.nodes, Images: images,
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
	managed, startErr := startDevClusters(ctx, cfg, clusters, dir, binRoot, o.nodes, images, out)
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
	printNextSteps(out, kubeconfig, clusters)
	if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
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
	}}
}

// ensureBuiltinCatalog creates the Catalog "builtin" unless it exists (a
// user may have changed or suspended it; that is kept).
func ensureBuiltinCatalog(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		return err
	}
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "builtin"},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}}},
	}
	if err := c.Create(ctx, cat); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Catalog builtin: %w", err)
	}
	return nil
}

func printNextSteps(out io.Writer, kubeconfig string, clusters []devCluster) {
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

Stop with Ctrl-C; the next run finds the same state.
`, kubeconfig)
}
