package main

import (
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
)

// now is the clock ages in tables are measured against; tests replace it.
var now = time.Now

// outputFlag adds -o table|yaml|json to cmd, completed by the shell.
func outputFlag(cmd *cobra.Command, out *string) {
	cmd.Flags().StringVarP(out, "output", "o", "table", "output format: table, yaml or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(cli.Outputs, cobra.ShellCompDirectiveNoFileComp))
}

// args wraps a cobra argument check so that a wrong count is a usage
// error (exit code 2).
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return cli.Usagef("%v; see %s --help", err, cmd.CommandPath())
		}
		return nil
	}
}

// namespaceOr is ns, else the kubeconfig's namespace.
func namespaceOr(ns, kubeconfig string) string {
	if ns != "" {
		return ns
	}
	return defaultNamespace(kubeconfig)
}

// isTerminal reports whether w is a terminal (a character device), where
// --wait redraws one progress line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Completion of resource names from the API server. Each lists one kind;
// an unreachable server completes nothing rather than files.

type lister func(cmd *cobra.Command) ([]string, error)

// completeArgs completes the first max positional arguments with names.
func completeArgs(max int, names lister) cobra.CompletionFunc {
	return func(cmd *cobra.Command, a []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(a) >= max {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := names(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return list, cobra.ShellCompDirectiveNoFileComp
	}
}

func extensionNames(kubeconfig *string) lister {
	return func(cmd *cobra.Command) ([]string, error) {
		c, _, err := hubClients(*kubeconfig)
		if err != nil {
			return nil, err
		}
		return cli.ExtensionNames(cmd.Context(), c)
	}
}

func catalogNames(kubeconfig *string) lister {
	return func(cmd *cobra.Command) ([]string, error) {
		c, _, err := hubClients(*kubeconfig)
		if err != nil {
			return nil, err
		}
		return cli.CatalogNames(cmd.Context(), c)
	}
}

func clusterNames(kubeconfig *string) lister {
	return func(cmd *cobra.Command) ([]string, error) {
		c, _, err := hubClients(*kubeconfig)
		if err != nil {
			return nil, err
		}
		return cli.ClusterNames(cmd.Context(), c)
	}
}

// installationNames lists the installations of the command's
// --namespace, else of every namespace when allNamespaces is true, else
// of the kubeconfig's namespace.
func installationNames(kubeconfig *string, namespace *string, allNamespaces bool) lister {
	return func(cmd *cobra.Command) ([]string, error) {
		c, _, err := hubClients(*kubeconfig)
		if err != nil {
			return nil, err
		}
		ns := *namespace
		if ns == "" && !allNamespaces {
			ns = defaultNamespace(*kubeconfig)
		}
		return cli.InstallationNames(cmd.Context(), c, ns)
	}
}

// clusterFlag adds --cluster, completed with ManagedCluster names.
func clusterFlag(cmd *cobra.Command, kubeconfig *string, value *string, usage string) {
	cmd.Flags().StringVar(value, "cluster", "", usage)
	_ = cmd.RegisterFlagCompletionFunc("cluster", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		names, err := clusterNames(kubeconfig)(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

// channelFlag adds --channel, an operator's catalog channel, completed
// with the channels of the extension the command's first argument names
// (install) or installs (upgrade: an installation of --namespace).
func channelFlag(cmd *cobra.Command, kubeconfig *string, value *string, usage string) {
	cmd.Flags().StringVar(value, "channel", "", usage)
	_ = cmd.RegisterFlagCompletionFunc("channel", func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, _, err := hubClients(*kubeconfig)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		extension := args[0]
		if cmd.Name() == "upgrade" {
			ns, _ := cmd.Flags().GetString("namespace")
			if extension, err = cli.ExtensionOf(cmd.Context(), c, namespaceOr(ns, *kubeconfig), args[0]); err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
		}
		channels, err := cli.ExtensionChannels(cmd.Context(), c, extension)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return channels, cobra.ShellCompDirectiveNoFileComp
	})
}

// selectorFlag adds -l/--selector, a ManagedCluster label selector,
// completed with the key=value labels the ManagedClusters carry.
func selectorFlag(cmd *cobra.Command, kubeconfig *string, value *string) {
	cmd.Flags().StringVarP(value, "selector", "l", "", "only clusters whose ManagedCluster labels match this selector (e.g. env=prod,annex.dev/shard!=eu); the hub has no labels")
	_ = cmd.RegisterFlagCompletionFunc("selector", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, _, err := hubClients(*kubeconfig)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		pairs, err := cli.ClusterLabels(cmd.Context(), c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return pairs, cobra.ShellCompDirectiveNoFileComp
	})
}

// namespaceFlag adds -n/--namespace.
func namespaceFlag(cmd *cobra.Command, value *string, usage string) {
	cmd.Flags().StringVarP(value, "namespace", "n", "", usage)
}
