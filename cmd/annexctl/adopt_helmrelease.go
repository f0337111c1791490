package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
)

// newAdoptHelmReleaseCommand is `annexctl adopt helmrelease`.
func newAdoptHelmReleaseCommand(kubeconfig *string) *cobra.Command {
	o := cli.HelmReleaseOptions{}
	a := cli.AdoptOptions{}
	var output string
	var w waitFlags
	cmd := &cobra.Command{
		Use:     "helmrelease NAME -n NAMESPACE [--cluster NAME] [--dry-run]",
		Aliases: []string{"hr"},
		Short:   "Take over the Helm release of a Flux HelmRelease in place, and suspend the HelmRelease",
		Long: `adopt helmrelease hands the Helm release a Flux HelmRelease
(helm.toolkit.fluxcd.io/v2) manages over to Annex:
  1. it makes sure a Catalog serves the chart: when none reads the
     HelmRelease's HelmRepository or OCIRepository, it creates one
     (flux-<namespace>-<name>) and waits until it is synced;
  2. it suspends the HelmRelease (spec.suspend), so that helm-controller no
     longer upgrades the release; who may not patch it is told the command;
  3. it adopts the release as adopt helm does: the release's name and storage
     namespace as helm-controller computes them (spec.releaseName, else
     [targetNamespace-]name; spec.storageNamespace), every object kept with
     its UID, Helm's storage of the release deleted once Annex recorded it.
Then delete the HelmRelease: a suspended HelmRelease's deletion uninstalls
nothing, and its release storage is gone anyway. If a Flux Kustomization
applies the HelmRelease, take it out of that Kustomization's source (or
suspend the Kustomization) first, or it sets spec.suspend back.

--dry-run prints the comparison, suspends nothing and creates nothing.`,
		Example: `  annexctl adopt helmrelease podinfo -n flux-system --dry-run
  annexctl adopt helmrelease podinfo -n flux-system`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if a.Output, err = cli.ParseOutput(output); err != nil {
				return err
			}
			o.Name, o.Namespace, o.Out = args[0], namespaceOr(o.Namespace, *kubeconfig), cmd.OutOrStdout()
			o.DryRun = a.DryRun
			c, clusters, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			prepared, err := cli.PrepareHelmRelease(cmd.Context(), c, clusters, o)
			if err != nil {
				return err
			}
			prepared.Output, prepared.InstallationNamespace = a.Output, a.InstallationNamespace
			if err := adoptHelm(cmd, *kubeconfig, prepared, w); err != nil {
				return err
			}
			if a.DryRun || a.Output != cli.OutputTable {
				return nil
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "HelmRelease %s/%s stays suspended: delete it now (flux delete helmrelease %s -n %s); nothing is uninstalled.\n",
				o.Namespace, o.Name, o.Name, o.Namespace)
			return err
		},
	}
	outputFlag(cmd, &output)
	namespaceFlag(cmd, &o.Namespace, "namespace of the HelmRelease (default: the kubeconfig's namespace)")
	clusterFlag(cmd, kubeconfig, &o.Cluster, "ManagedCluster Flux runs on (default: the hub cluster)")
	f := cmd.Flags()
	f.BoolVar(&a.DryRun, "dry-run", false, "print what would be done and the comparison; change nothing")
	f.StringVar(&a.InstallationNamespace, "installation-namespace", "", "hub namespace of the ExtensionInstallation (default: the release's namespace)")
	f.DurationVar(&w.timeout, "timeout", 5*time.Minute, "how long to wait for the adopting installation to be Ready")
	f.DurationVar(&o.CatalogTimeout, "catalog-timeout", 2*time.Minute, "how long to wait for a Catalog this command creates to be synced")
	return cmd
}
