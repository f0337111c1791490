// Command example-operator runs the example operator of Annex's built-in
// catalog (internal/exampleoperator): what the image
// annex.dev/example-operator:<version> of its bundles would contain. `annex
// dev` runs it for each Pod of that image, with --version set to the
// image's tag.
//
// Like an operator in a pod it reads its namespaces from WATCH_NAMESPACE
// (the bundle sets it from the olm.targetNamespaces annotation; empty
// means all) and its own namespace from POD_NAMESPACE; the cluster comes
// from --kubeconfig, KUBECONFIG, or the in-cluster service account. From
// version 0.4.0 it serves a validating and a conversion webhook for Banners
// on --webhook-port with the certificate in --webhook-cert-dir, where the
// bundle's Pod has them; annex dev points both at what it gives the process.
package main

import (
	"flag"
	"fmt"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/annex-platform/annex/internal/exampleoperator"
)

func main() {
	var (
		o          exampleoperator.Options
		namespaces string
	)
	flag.StringVar(&o.Version, "version", os.Getenv("OPERATOR_VERSION"), "the operator version to behave as, e.g. 0.2.0 (default $OPERATOR_VERSION)")
	flag.StringVar(&namespaces, "watch-namespaces", os.Getenv("WATCH_NAMESPACE"), "comma-separated namespaces to serve; empty means all (default $WATCH_NAMESPACE)")
	flag.BoolVar(&o.LeaderElection, "leader-elect", false, "take turns with other replicas through a Lease")
	flag.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the leader-election Lease (default $POD_NAMESPACE)")
	flag.StringVar(&o.MetricsAddr, "metrics-bind-address", "0", `address of the metrics endpoint; "0" turns it off`)
	flag.StringVar(&o.WebhookHost, "webhook-host", "", "address the webhook server (versions from 0.4.0) listens on; empty means all")
	flag.IntVar(&o.WebhookPort, "webhook-port", exampleoperator.WebhookPort, "port of the webhook server (versions from 0.4.0)")
	flag.StringVar(&o.WebhookCertDir, "webhook-cert-dir", exampleoperator.WebhookCertDir, "folder holding the webhook server's tls.crt and tls.key (versions from 0.4.0)")
	flag.StringVar(&o.HealthAddr, "health-probe-bind-address", "0", `address of /healthz and /readyz; "0" turns them off`)
	logOpts := zap.Options{Development: true}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
	if err := run(o, namespaces); err != nil {
		fmt.Fprintln(os.Stderr, "example-operator:", err)
		os.Exit(1)
	}
}

func run(o exampleoperator.Options, namespaces string) error {
	if o.Version == "" {
		return fmt.Errorf("--version is required: the operator version to behave as (0.1.0, 0.2.0, …); annex dev passes the image tag")
	}
	o.WatchNamespaces = exampleoperator.ParseNamespaces(namespaces)
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := exampleoperator.NewManager(cfg, o)
	if err != nil {
		return err
	}
	where := "all namespaces"
	if len(o.WatchNamespaces) > 0 {
		where = fmt.Sprintf("namespaces %v", o.WatchNamespaces)
	}
	ctrl.Log.Info(fmt.Sprintf("example-operator %s serving Banners in %s", o.Version, where))
	return mgr.Start(ctrl.SetupSignalHandler())
}
