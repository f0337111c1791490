package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/internal/controller/installation"
	"github.com/annex-platform/annex/internal/manager"
	"github.com/annex-platform/annex/internal/memlimit"
	"github.com/annex-platform/annex/internal/version"
)

func newManagerCommand() *cobra.Command {
	var (
		o          manager.Options
		cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the Annex controllers against the cluster of the current kubeconfig (or in-cluster)",
		Long: `Run the Annex controllers against the cluster of the current kubeconfig (or in-cluster).

In a container with a memory limit (its cgroup's), the manager gives Go's garbage
collector a soft limit of 90 % of it, unless GOMEMLIMIT is set.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logVersion("manager")
			if limit := memlimit.Apply(); limit > 0 {
				ctrl.Log.WithName("manager").Info("Go memory limit set under the container's (GOMEMLIMIT overrides)",
					"bytes", limit, "fraction", memlimit.Fraction)
			}
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			mgr, err := manager.New(cfg, o)
			if err != nil {
				return err
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			return mgr.Start(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile to this file when the manager stops (go tool pprof reads it)")
	cmd.Flags().StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint; "0" turns it off`)
	cmd.Flags().StringVar(&o.HealthAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" turns them off`)
	cmd.Flags().StringVar(&o.PprofAddr, "pprof-bind-address", "", `address of Go's /debug/pprof profiles (heap, goroutines, CPU), e.g. "127.0.0.1:6060"; empty turns it off`)
	cmd.Flags().BoolVar(&o.LeaderElection, "leader-elect", false, "elect a leader so that only one replica reconciles")
	cmd.Flags().StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease, shared by every shard (default: the namespace the manager runs in)")
	cmd.Flags().StringVar(&o.Shard, "shard", "default", "serve only the ManagedClusters labelled annex.dev/shard=NAME and their installations, with a Lease of the shard's own; the default shard serves the unlabelled clusters and the hub, and alone runs catalogs, extensions, profiles and hooks")
	cmd.Flags().IntVar(&o.Workers, "concurrency", installation.DefaultWorkers, "how many installations reconcile at once")
	cmd.Flags().StringVar(&o.DefaultServiceAccount, "default-service-account", "", "multi-tenant mode: installations that name no spec.serviceAccountName act as this ServiceAccount of their own namespace (Annex impersonates it to apply and delete)")
	cmd.Flags().BoolVar(&o.RestrictTargets, "restrict-targets", false, "refuse a spec.targetNamespace other than the installation's namespace, and any spec.cluster, unless the hub admin annotates the installation's namespace with annex.dev/allow-target-namespaces or annex.dev/allow-clusters")
	cmd.Flags().StringVar(&o.DefaultVerifyPolicy, "default-verify-policy", "", "NAMESPACE/NAME of a ConfigMap whose key verify.yaml is the cluster-wide default signature policy (the fields of a Catalog's spec.verify): it covers every Catalog without spec.verify, and a catalog's Audit cannot loosen its Enforce")
	cmd.Flags().StringVar(&o.CacheDir, "cache-dir", "", "folder for fetched artifacts and the last good content of each catalog (default: $XDG_CACHE_HOME/annex)")
	return cmd
}

// logVersion logs the build version first thing, so that every log of a
// manager says which Annex wrote it.
func logVersion(command string) {
	v := version.Get()
	ctrl.Log.WithName(command).Info("starting Annex", "version", v.Version, "commit", v.Commit, "go", v.GoVersion, "platform", v.Platform)
}

// startCPUProfile profiles the process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
