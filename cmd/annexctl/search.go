package main

import (
	"strings"

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
	cmd := &cobra.Command{
		Use:   "show EXTENSION",
		Short: "Show an extension: its versions with their Kubernetes ranges, dependencies, catalog, deprecation, and its values",
		Example: `  annexctl show cert-manager
  annexctl show cert-manager -o yaml`,
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
			d, err := cli.Show(cmd.Context(), c, a[0])
			if err != nil {
				return err
			}
			return cli.WriteExtension(cmd.OutOrStdout(), o, d)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}
