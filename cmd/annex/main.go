// Command annex runs the Annex manager (`annex manager`) or a complete local
// environment for trying Annex (`annex dev`).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	// Maintenance windows name IANA time zones; the manager's image may
	// carry no zoneinfo.
	_ "time/tzdata"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/annex-platform/annex/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "annex:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	logOpts := zap.Options{Development: true}
	root := &cobra.Command{
		Use:           "annex",
		Short:         "Annex installs platform extensions into Kubernetes clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
		},
	}
	root.PersistentFlags().BoolVar(&logOpts.Development, "log-development", true, "human-readable logs (false: JSON)")
	root.AddCommand(newManagerCommand(), newDevCommand(), newVersionCommand())
	return root
}

// newVersionCommand prints the build version (see internal/version).
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this annex binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "annex", version.Get())
			return err
		},
	}
}
