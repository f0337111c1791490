package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
)

// newSearchCommand is `annexctl search [TEXT]`.
func newSearchCommand(kubeconfig *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "search [TEXT]",
		Short: "Find extensions whose name, display name, keywords or description contain TEXT, across every catalog",
		Example: `  annexctl search cert
  annexctl search "service mesh" -o json
  annexctl search            # every extension`,
		Args: args(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, a []string) error {
			o, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			ms, err := cli.Search(cmd.Context(), c, strings.Join(a, " "))
			if err != nil {
				return err
			}
			return cli.WriteMatches(cmd.OutOrStdout(), o, ms)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// newShowCommand is `annexctl show EXTENSION`.
func newShowCommand(kubeconfig *string) *cobra.Command {
	var output string
	var valuesWait time.Duration
	cmd := &cobra.Command{
		Use:   "show EXTENSION",
		Short: "Show an extension: its versions with their Kubernetes ranges, dependencies, catalog, deprecation, and its values",
		Long: `Show an extension: its versions with their Kubernetes ranges, dependencies,
catalog and deprecation, and the values of its newest version with their
defaults (the schema's default, else the chart's values.yaml).

A Helm repository's index carries neither values.schema.json nor
values.yaml. The first show of a version asks the Annex manager to read them
from the chart (annotation annex.dev/values-requested on the Extension): it
has the catalog's credentials and keeps the answer in the Extension's
status, by the chart's digest, for everyone after. Asking needs permission
to patch extensions.annex.dev.`,
		Example: `  annexctl show cert-manager
  annexctl show cert-manager -o yaml
  annexctl show cert-manager --values-wait 0   # do not ask the manager`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: completeArgs(1, extensionNames(kubeconfig)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			d, err := cli.Show(cmd.Context(), c, a[0], valuesWait)
			if err != nil {
				return err
			}
			return cli.WriteExtension(cmd.OutOrStdout(), o, d)
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().DurationVar(&valuesWait, "values-wait", 30*time.Second, "how long to wait for the manager to read the values of a version it has not read yet (0: do not ask)")
	return cmd
}
