package main

import (
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/internal/manager"
)

func newManagerCommand() *cobra.Command {
	var o manager.Options
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the Annex controllers against the cluster of the current kubeconfig (or in-cluster)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			mgr, err := manager.New(cfg, o)
			if err != nil {
				return err
			}
			return mgr.Start(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint; "0" turns it off`)
	cmd.Flags().StringVar(&o.HealthAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz; "0" turns them off`)
	cmd.Flags().BoolVar(&o.LeaderElection, "leader-elect", false, "elect a leader so that only one replica reconciles")
	cmd.Flags().StringVar(&o.CacheDir, "cache-dir", "", "folder for fetched artifacts and the last good content of each catalog (default: $XDG_CACHE_HOME/annex)")
	return cmd
}
