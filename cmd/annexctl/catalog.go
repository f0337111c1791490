package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
)

// newCatalogCommand is `annexctl catalog list|add|remove|sync`.
func newCatalogCommand(kubeconfig *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "List, add, remove and sync the catalogs extensions come from",
	}
	cmd.AddCommand(newCatalogListCommand(kubeconfig), newCatalogAddCommand(kubeconfig),
		newCatalogRemoveCommand(kubeconfig), newCatalogSyncCommand(kubeconfig))
	return cmd
}

func newCatalogListCommand(kubeconfig *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the catalogs, their source, whether their last sync worked, and how many extensions each supplies",
		Example: "  annexctl catalog list\n  annexctl catalog list -o yaml",
		Args:    args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			cs, err := cli.ListCatalogs(cmd.Context(), c)
			if err != nil {
				return err
			}
			return cli.WriteCatalogs(cmd.OutOrStdout(), o, cs, now())
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func newCatalogAddCommand(kubeconfig *string) *cobra.Command {
	var o cli.CatalogOptions
	var output string
	var dryRun, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "add NAME SOURCE [--olm] [--secret NAMESPACE/NAME] [--interval 10m] [--priority N] [--verify-key FILE.pub]... [--verify-mode Enforce|Audit] [--wait]",
		Short: "Add a catalog: a Helm repository, an OCI registry, a folder on the manager's disk, the built-in catalog, or an OLM catalog",
		Long: `add creates a Catalog; Annex syncs it at once and every --interval after, and
its extensions appear in annexctl search. SOURCE is
  https://…               a Helm repository (index.yaml)
  oci://registry/repo     Helm charts in an OCI registry
  /absolute/path          a folder of charts on the manager's disk
  builtin                 the catalog compiled into Annex
With --olm, SOURCE is an OLM File-Based Catalog: an https:// URL of the
rendered catalog, an absolute path, or a catalog image reference.

--verify-key FILE (repeatable: two keys at once rotate a key) makes the
catalog verify cosign signatures: every version an installation fetches
from it must be signed by one of these PEM public keys (annexctl package
keygen's .pub, cosign.pub), for its exact digest. Each key is named after
its file (release-2026.pub is key "release-2026") and written inline in
spec.verify. --verify-mode Enforce (the default) refuses what they did not
sign; Audit installs it and reports. Signatures are verified on artifacts
in OCI registries: --verify-key takes an oci:// SOURCE only.`,
		Example: `  annexctl catalog add bitnami https://charts.bitnami.com/bitnami
  annexctl catalog add internal oci://registry.example.com/charts --secret annex-system/registry-creds
  annexctl catalog add operatorhub quay.io/operatorhubio/catalog:latest --olm
  annexctl catalog add packages oci://registry.example.com/packages --verify-key release-2026.pub --verify-mode Enforce
  annexctl catalog add builtin builtin --dry-run -o yaml`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			out, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			o.Name, o.Source = a[0], a[1]
			if dryRun {
				cat, err := cli.CatalogFor(o)
				if err != nil {
					return err
				}
				return cli.WriteObject(cmd.OutOrStdout(), out, cat, "created (dry run)")
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			cat, err := cli.AddCatalog(cmd.Context(), c, o)
			if err != nil {
				return err
			}
			if out != cli.OutputTable {
				if err := cli.WriteObject(cmd.OutOrStdout(), out, cat, "created"); err != nil || !wait {
					return err
				}
				return cli.WaitCatalog(cmd.Context(), c, cat.Name, "", timeout)
			}
			if !wait {
				fmt.Fprintf(cmd.OutOrStdout(), "catalog %s added; Annex syncs it now (annexctl catalog list shows the result)\n", cat.Name)
			} else {
				if err := cli.WaitCatalog(cmd.Context(), c, cat.Name, "", timeout); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "catalog %s added and synced\n", cat.Name)
			}
			if v := cli.DescribeVerify(cat.Spec.Verify); v != "" {
				fmt.Fprintln(cmd.OutOrStdout(), v)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.OLM, "olm", false, "SOURCE is an OLM File-Based Catalog (URL, path or image)")
	f.StringVar(&o.Secret, "secret", "", "NAMESPACE/NAME of a Secret with credentials (username/password, token, ca.crt, tls.crt/tls.key)")
	f.BoolVar(&o.Insecure, "insecure", false, "allow sending the credentials over plain http")
	f.DurationVar(&o.Interval, "interval", 0, "time between syncs (default 10m)")
	f.Int32Var(&o.Priority, "priority", 0, "which catalog wins when several offer the same version: the highest")
	f.BoolVar(&o.Suspend, "suspend", false, "create it suspended (not synced)")
	f.StringArrayVar(&o.VerifyKeys, "verify-key", nil, "trust cosign signatures by this PEM public key file (repeatable); named after the file: release-2026.pub is key release-2026")
	f.StringVar(&o.VerifyMode, "verify-mode", "", "with --verify-key: Enforce (refuse what the keys did not sign; the default) or Audit (install it and report)")
	_ = cmd.MarkFlagFilename("verify-key", "pub", "pem")
	_ = cmd.RegisterFlagCompletionFunc("verify-mode", cobra.FixedCompletions(cli.VerifyModes, cobra.ShellCompDirectiveNoFileComp))
	f.BoolVar(&dryRun, "dry-run", false, "print the Catalog instead of creating it (with -o yaml or -o json)")
	f.BoolVar(&wait, "wait", false, "wait until the manager has synced the catalog (exit 1 with its message if the sync failed)")
	f.DurationVar(&timeout, "timeout", 2*time.Minute, "with --wait: how long to wait")
	outputFlag(cmd, &output)
	return cmd
}

func newCatalogRemoveCommand(kubeconfig *string) *cobra.Command {
	return &cobra.Command{
		Use:     "remove NAME...",
		Aliases: []string{"rm"},
		Short:   "Remove catalogs; their extensions go, what is installed from them stays (but cannot upgrade)",
		Example: "  annexctl catalog remove bitnami",
		Args:    args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: func(cmd *cobra.Command, a []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeArgs(1<<30, catalogNames(kubeconfig))(cmd, a, s)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			for _, name := range a {
				if err := cli.RemoveCatalog(cmd.Context(), c, name); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "catalog %s removed\n", name)
			}
			return nil
		},
	}
}

func newCatalogSyncCommand(kubeconfig *string) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync NAME... [--wait]",
		Short: "Sync catalogs now instead of at their next interval",
		Long: `sync sets the annotation annex.dev/sync-requested-at on each Catalog, which makes Annex read its source again; annexctl catalog list shows the result.
With --wait it waits until the manager has answered each request (the Catalog's status.lastHandledSyncRequest)
and exits 1 with the Ready condition's message when a sync failed.`,
		Example: "  annexctl catalog sync bitnami\n  annexctl catalog sync packages --wait",
		Args:    args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: func(cmd *cobra.Command, a []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeArgs(1<<30, catalogNames(kubeconfig))(cmd, a, s)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			for _, name := range a {
				request, err := cli.SyncCatalog(cmd.Context(), c, name, now())
				if err != nil {
					return err
				}
				if !wait {
					fmt.Fprintf(cmd.OutOrStdout(), "catalog %s: sync requested\n", name)
					continue
				}
				if err := cli.WaitCatalog(cmd.Context(), c, name, request, timeout); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "catalog %s: synced\n", name)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the manager has answered the sync (exit 1 with its message if it failed)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "with --wait: how long to wait for each catalog")
	return cmd
}
