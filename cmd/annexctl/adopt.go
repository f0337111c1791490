package main

import (
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/builtin"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/cli"
)

// newAdoptCommand is `annexctl adopt helm`.
func newAdoptCommand(kubeconfig *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "adopt",
		Short: "Take over in place what another tool installed (a Helm release, an OLM operator)",
	}
	cmd.AddCommand(newAdoptHelmCommand(kubeconfig), newAdoptHelmReleaseCommand(kubeconfig), newAdoptOLMCommand(kubeconfig))
	return cmd
}

func newAdoptHelmCommand(kubeconfig *string) *cobra.Command {
	o := cli.AdoptOptions{}
	var output string
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "helm RELEASE -n NAMESPACE [--cluster NAME] [--dry-run]",
		Short: "Adopt a Helm release in place: same objects, same UIDs, Helm's storage retired",
		Long: `adopt helm reads a Helm release as Helm 3 and 4 store it (Secrets, else ConfigMaps,
labelled owner=helm) on the hub or on a ManagedCluster, picks its deployed
revision, finds the chart's version among the catalogs' Extensions, renders it
with the release's user-supplied values (helm get values) and compares the
result with the live objects. Each object is:
  same     the live object has every field Annex renders, with the same value
  differs  adopting writes the fields listed (live → Annex)
  missing  Annex renders it and it does not exist: adopting creates it
  extra    the release has it and Annex's render does not: it is left alone
Fields only the live object has (status, server-set metadata, defaults, other
managers' fields) are not compared; Helm hooks are counted, not compared, and
not run again.

--dry-run prints the comparison and changes nothing. Without it, adopt helm
then creates an ExtensionInstallation named after the release (extension: the
chart; spec.version pinned to the release's chart version; spec.values: the
release's user-supplied values; spec.adopt.helm naming the release) and waits
until it is Ready. Annex takes the objects over in place: each keeps its UID, an
object that is the same gets only Annex's labels (and Helm's field managers hand
their fields to Annex's), one that differs is corrected, a Deployment whose
template is unchanged is not rolled. Once revision 1 is recorded, Helm's storage
of the release is deleted (its last manifest is kept in Annex's record), so
helm list no longer shows it; upgrade it with annexctl upgrade from then on.

It refuses, before writing anything, a release whose latest revision is
pending-install, pending-upgrade or pending-rollback (and says how to fix it),
a chart version in no catalog (naming the catalogs searched) and a chart that
does not render with the release's values.`,
		Example: `  annexctl adopt helm web -n team-a --dry-run
  annexctl adopt helm web -n team-a
  annexctl adopt helm cert-manager -n cert-manager --cluster prod-eu --installation-namespace platform`,
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
			return adoptHelm(cmd, *kubeconfig, o, w)
		},
	}
	outputFlag(cmd, &output)
	namespaceFlag(cmd, &o.Namespace, "namespace of the Helm release, as helm -n names it (default: the kubeconfig's namespace)")
	clusterFlag(cmd, kubeconfig, &o.Cluster, "ManagedCluster the release runs in (default: the hub cluster)")
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "print the comparison and change nothing")
	f.StringVar(&o.InstallationNamespace, "installation-namespace", "", "hub namespace of the ExtensionInstallation (default: the release's namespace)")
	f.DurationVar(&w.timeout, "timeout", 5*time.Minute, "how long to wait for the adopting installation to be Ready")
	return cmd
}

// adoptHelm runs an adoption of o.Release as adopt helm does: the
// comparison only with --dry-run, otherwise the adopting installation,
// followed until Ready, and what was kept.
func adoptHelm(cmd *cobra.Command, kubeconfig string, o cli.AdoptOptions, w waitFlags) error {
	c, clusters, err := hubClients(kubeconfig)
	if err != nil {
		return err
	}
	fetch := sources.Artifacts{Fetcher: &catalog.Fetcher{Lookup: catalog.KubeLookup{Reader: c}, Builtin: builtin.Archive}}
	if o.DryRun {
		return cli.AdoptHelm(cmd.Context(), c, clusters, fetch, o)
	}
	inst, view, err := cli.AdoptHelmInPlace(cmd.Context(), c, clusters, fetch, o)
	if err != nil {
		return err
	}
	if o.Output != cli.OutputTable {
		// Only the outcome: the installation, once Ready.
		if _, err := cli.Wait(cmd.Context(), c, cli.WaitOptions{Namespace: inst.Namespace, Name: inst.Name, Timeout: w.timeout}); err != nil {
			return err
		}
	} else if err := w.follow(cmd, c, inst.Namespace, inst.Name, false); err != nil {
		return err
	}
	if err := c.Get(cmd.Context(), client.ObjectKeyFromObject(inst), inst); err != nil {
		return err
	}
	if o.Output != cli.OutputTable {
		return cli.WriteObject(o.Out, o.Output, inst, "")
	}
	kept, err := cli.KeptObjects(cmd.Context(), clusters, o.Cluster, view)
	if err != nil {
		return err
	}
	return cli.WriteAdopted(o.Out, inst, kept)
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
