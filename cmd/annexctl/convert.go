package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/convert/kkp"
)

// newConvertCommand is `annexctl convert kkp`.
func newConvertCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert",
		Short: "Turn another tool's manifests into Annex's",
	}
	cmd.AddCommand(newConvertKKPCommand())
	return cmd
}

func newConvertKKPCommand() *cobra.Command {
	o := kkp.Options{}
	cmd := &cobra.Command{
		Use:   "kkp FILE...",
		Short: "Convert KKP ApplicationDefinitions and ApplicationInstallations into Catalogs, ExtensionProfiles and ExtensionInstallations",
		Long: `convert kkp reads Kubermatic Kubernetes Platform application manifests
(apps.kubermatic.k8c.io/v1 ApplicationDefinition and ApplicationInstallation,
alone or in Lists, as kubectl get -o yaml writes them; "-" reads stdin) and
prints Annex manifests on stdout, in the order to apply them:
  - a Catalog per Helm repository or OCI registry the definitions' versions
    come from;
  - an ExtensionProfile per default or enforced definition (mode Default or
    Enforced), for the clusters of its datacenters (the ManagedCluster label
    --datacenter-label) or every cluster, at its default version with its
    default values;
  - an ExtensionInstallation per ApplicationInstallation, pinned to the chart
    version of its application version, with its values, namespace, interval,
    timeout and atomic (install.remediation Uninstall).
On stderr it says what has no equivalent (Git sources, credentials, namespace
labels, wait and enableDNS, ...) and names the Helm release KKP made for each
installation (<namespace>-<name>, shortened past 53 characters as KKP does),
to adopt in place with annexctl adopt helm. It changes nothing in a cluster.`,
		Example: `  kubectl get applicationdefinitions,applicationinstallations -A -o yaml > kkp.yaml
  annexctl convert kkp kkp.yaml --cluster prod-eu --namespace platform > annex.yaml`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, files []string) error {
			var docs []byte
			for _, f := range files {
				b, err := readFile(cmd.InOrStdin(), f)
				if err != nil {
					return err
				}
				docs = append(append(docs, b...), "\n---\n"...)
			}
			res, err := kkp.Convert(docs, o)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			out, err := res.YAML()
			if err != nil {
				return err
			}
			if _, err := cmd.OutOrStdout().Write(out); err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.ErrOrStderr(), res.Report())
			return err
		},
	}
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "ManagedCluster the ApplicationInstallations run on (their spec.cluster; default: the hub)")
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "hub namespace of the ExtensionInstallations (default: each ApplicationInstallation's own)")
	cmd.Flags().StringVar(&o.DatacenterLabel, "datacenter-label", kkp.DefaultDatacenterLabel, "ManagedCluster label a definition's selector.datacenters selects on")
	return cmd
}

// readFile reads path, or stdin for "-".
func readFile(stdin io.Reader, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	return b, nil
}
