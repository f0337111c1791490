package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
)

// newStatusCommand is `annexctl status [NAME]`.
func newStatusCommand(kubeconfig *string) *cobra.Command {
	var f cli.StatusFilter
	var q cli.FleetQuery
	var selector, output string
	var limit int
	cmd := &cobra.Command{
		Use:   "status [INSTALLATION] [-n NAMESPACE] [--cluster NAME] [-l SELECTOR] [--not-ready] [--limit N]",
		Short: "Show, per cluster, every installation: its version, stage, plan progress, dependencies, and the first reason a person can act on",
		Long: `status reads every ManagedCluster, ExtensionInstallation and Extension (three
list requests, however large the fleet) and prints a tree per cluster. Each
installation shows its version (installed → resolved during an upgrade), its
stage (resolve, dependencies, render, gates, apply, healthy), the plan it
applies with its progress, the installations it depends on, and, when it is
stuck, the first reason a person can act on — its own, or that of the dependency
it waits for. Without -n it covers every namespace. The hub cluster is "(hub)".

Unless it shows one installation or one --cluster, a summary above the tree
counts the clusters: ready, not ready (an installation on it is not Ready),
unreachable; their installations and how many are not Ready; the clusters per
Kubernetes version and per shard (the ManagedCluster label annex.dev/shard,
"default" without it). The tree lists unreachable clusters first, then the not
ready ones, then the ready ones, and on each cluster the installations that are
not Ready first. -l picks clusters by their ManagedCluster labels (the summary
counts those); --not-ready and --limit shorten the list below it. -o yaml|json
carry the summary as "summary".`,
		Example: `  annexctl status
  annexctl status podinfo -n team-a
  annexctl status --cluster prod-eu -o json
  annexctl status -l env=prod,annex.dev/shard=eu --not-ready --limit 20`,
		Args: args(cobra.MaximumNArgs(1)),
		ValidArgsFunction: func(cmd *cobra.Command, a []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeArgs(1, installationNames(kubeconfig, &f.Namespace, true))(cmd, a, s)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			o, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			if len(a) == 1 {
				f.Name = a[0]
			}
			if q.Selector, err = cli.ParseSelector(selector); err != nil {
				return cli.Usagef("-l: %v", err)
			}
			if limit < 0 {
				return cli.Usagef("--limit %d: give a number of clusters, or 0 for every one", limit)
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			tree, err := cli.Status(cmd.Context(), c, f)
			if err != nil {
				return err
			}
			tree = cli.LimitClusters(cli.NarrowFleet(tree, q), limit)
			if o == cli.OutputTable && selector != "" && tree.Summary.Clusters == 0 {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "No cluster has labels that match %s.\n", selector)
				return err
			}
			if f.Name != "" || f.Cluster != "" {
				// One installation or one cluster: its tree is its summary.
				tree.Summary = nil
			}
			return cli.WriteStatus(cmd.OutOrStdout(), o, tree, now())
		},
	}
	namespaceFlag(cmd, &f.Namespace, "only installations of this namespace (default: every namespace)")
	clusterFlag(cmd, kubeconfig, &f.Cluster, `only this ManagedCluster ("(hub)" for the hub)`)
	selectorFlag(cmd, kubeconfig, &selector)
	cmd.Flags().BoolVar(&q.NotReady, "not-ready", false, "list only the clusters that are not ready and, on them, the installations that are not Ready")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most this many clusters, those that need a person first (0: every one); the summary counts them all")
	outputFlag(cmd, &output)
	return cmd
}

// newEventsCommand is `annexctl events [INSTALLATION]`.
func newEventsCommand(kubeconfig *string) *cobra.Command {
	var f cli.EventFilter
	var all bool
	var output string
	cmd := &cobra.Command{
		Use:   "events [INSTALLATION] [-n NAMESPACE | -A]",
		Short: "List what Annex recorded about installations (installs, upgrades, rollbacks, failures), oldest first",
		Example: `  annexctl events podinfo -n team-a
  annexctl events -A -o json`,
		Args: args(cobra.MaximumNArgs(1)),
		ValidArgsFunction: func(cmd *cobra.Command, a []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeArgs(1, installationNames(kubeconfig, &f.Namespace, all))(cmd, a, s)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			o, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			if len(a) == 1 {
				f.Installation = a[0]
			}
			if all && f.Namespace != "" {
				return cli.Usagef("-A and -n exclude each other")
			}
			if !all {
				f.Namespace = namespaceOr(f.Namespace, *kubeconfig)
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			es, err := cli.Events(cmd.Context(), c, f)
			if err != nil {
				return err
			}
			return cli.WriteEvents(cmd.OutOrStdout(), o, es, now())
		},
	}
	namespaceFlag(cmd, &f.Namespace, "namespace of the installations (default: the kubeconfig's)")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "events of every namespace")
	outputFlag(cmd, &output)
	return cmd
}
