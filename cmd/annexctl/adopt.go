package main

import (
	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/builtin"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/cli"
)

// newAdoptCommand is `annexctl adopt helm`.
func newAdoptCommand(kubeconfig *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adopt",
		Short: "Compare what another tool installed with what Annex would install in its place",
	}
	cmd.AddCommand(newAdoptHelmCommand(kubeconfig))
	return cmd
}

func newAdoptHelmCommand(kubeconfig *string) *cobra.Command {
	o := cli.AdoptOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "helm RELEASE -n NAMESPACE [--cluster NAME]",
		Short: "Compare a Helm release with Annex's render of its chart, object by object; changes nothing",
		Long: `adopt helm reads a Helm release as Helm 3 and 4 store it (Secrets, else ConfigMaps,
labelled owner=helm) on the hub or on a ManagedCluster, picks its deployed
revision, finds the chart's version among the catalogs' Extensions, renders it
with the release's user-supplied values (helm get values) and compares the
result with the live objects. Each object is:
  same     the live object has every field Annex renders, with the same value
  differs  adopting would change the fields listed (live → Annex)
  missing  Annex renders it and it does not exist
  extra    the release has it and Annex's render does not
Fields only the live object has (status, server-set metadata, defaults, other
managers' fields) are not compared; Helm hooks are counted, not compared.

For now this is a dry run, and the only mode: it changes nothing. Adopting the
release in place (an installation pinned to the chart version, Helm's storage
retired) is not built yet.

It refuses a release whose latest revision is pending-install, pending-upgrade
or pending-rollback, and says how to fix it.`,
		Example: `  annexctl adopt helm web -n team-a
  annexctl adopt helm cert-manager -n cert-manager --cluster prod-eu -o yaml`,
		Args: args(cobra.ExactArgs(1)),
		ValidArgsFunction: func(cmd *cobra.Command, a []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeArgs(1, helmReleaseNames(kubeconfig, &o.Cluster, &o.Namespace))(cmd, a, s)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			var err error
			if o.Output, err = cli.ParseOutput(output); err != nil {
				return err
			}
			o.Release, o.Namespace = a[0], namespaceOr(o.Namespace, *kubeconfig)
			o.Out = cmd.OutOrStdout()
			c, clusters, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			fetch := sources.Artifacts{Fetcher: &catalog.Fetcher{Lookup: catalog.KubeLookup{Reader: c}, Builtin: builtin.Archive}}
			return cli.AdoptHelm(cmd.Context(), c, clusters, fetch, o)
		},
	}
	outputFlag(cmd, &output)
	namespaceFlag(cmd, &o.Namespace, "namespace of the Helm release (default: the kubeconfig's namespace)")
	clusterFlag(cmd, kubeconfig, &o.Cluster, "ManagedCluster the release runs in (default: the hub cluster)")
	return cmd
}

// helmReleaseNames lists the Helm releases of the command's --namespace
// (else the kubeconfig's) on its --cluster (else the hub).
func helmReleaseNames(kubeconfig, clusterName, namespace *string) lister {
	return func(cmd *cobra.Command) ([]string, error) {
		_, clusters, err := hubClients(*kubeconfig)
		if err != nil {
			return nil, err
		}
		t, err := clusters.Target(cmd.Context(), *clusterName)
		if err != nil {
			return nil, err
		}
		return cli.HelmReleaseNames(cmd.Context(), t.Applier().Client, namespaceOr(*namespace, *kubeconfig))
	}
}
