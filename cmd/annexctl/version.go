package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/version"
)

// newVersionCommand prints the build version (internal/version).
func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of this annexctl binary",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			info := version.Get()
			if o != cli.OutputTable {
				return cli.WriteData(cmd.OutOrStdout(), o, info)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), cmd.Root().DisplayName(), info)
			return err
		},
	}
	outputFlag(cmd, &output)
	return cmd
}
