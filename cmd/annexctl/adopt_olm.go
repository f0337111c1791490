package main

import (
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/cli"
)

// newAdoptOLMCommand is `annexctl adopt olm`.
func newAdoptOLMCommand(kubeconfig *string) *cobra.Command {
	o := cli.AdoptOLMOptions{}
	var output string
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "olm SUBSCRIPTION -n NAMESPACE [--cluster NAME] [--dry-run]",
		Short: "Adopt an operator OLM v0 installed in place: same objects, same UIDs, OLM's Subscription, InstallPlans and CSV removed",
		Long: `adopt olm reads an OLM v0 Subscription (operators.coreos.com/v1alpha1) on the
hub or on a ManagedCluster, its installed ClusterServiceVersion
(status.installedCSV) and the InstallPlans that installed it, refuses a CSV
that is not Succeeded, and finds the package at the CSV's spec.version among
the Extensions of olm Catalogs (naming the catalogs searched when none has it).

--dry-run prints what it found and changes nothing. Without it, adopt olm
creates an ExtensionInstallation named after the Subscription (extension: the
package; spec.version: the CSV's version; spec.channel: the Subscription's;
spec.watchNamespaces: the CSV's olm.targetNamespaces; spec.adopt.olm naming
the Subscription) and waits until it is Ready. Annex runs the bundle's plan
with the operator's objects taken over in place (each keeps its UID; OLM's
field managers olm and catalog hand their fields to Annex). Once revision 1 is
recorded, every adopted object loses its ownerReferences to the CSV and OLM's
olm.owner labels, and then the Subscription, the InstallPlans and the CSV are
deleted: OLM garbage-collects only what still points at the CSV (its own RBAC
of generated names, which Annex rendered afresh). The operator's custom
resources are not touched.`,
		Example: `  annexctl adopt olm memcached -n operators --dry-run
  annexctl adopt olm memcached -n operators`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			var err error
			if o.Output, err = cli.ParseOutput(output); err != nil {
				return err
			}
			o.Subscription, o.Namespace = a[0], namespaceOr(o.Namespace, *kubeconfig)
			o.Out = cmd.OutOrStdout()
			c, clusters, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			inst, err := cli.AdoptOLMInPlace(cmd.Context(), c, clusters, o)
			if err != nil || o.DryRun {
				return err
			}
			if o.Output != cli.OutputTable {
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
			return cli.WriteAdoptedOLM(o.Out, inst)
		},
	}
	outputFlag(cmd, &output)
	namespaceFlag(cmd, &o.Namespace, "namespace of the Subscription (default: the kubeconfig's namespace)")
	clusterFlag(cmd, kubeconfig, &o.Cluster, "ManagedCluster the operator runs in (default: the hub cluster)")
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "print what adopting would do and change nothing")
	f.StringVar(&o.InstallationNamespace, "installation-namespace", "", "hub namespace of the ExtensionInstallation (default: the Subscription's namespace)")
	f.DurationVar(&w.timeout, "timeout", 5*time.Minute, "how long to wait for the adopting installation to be Ready")
	return cmd
}
