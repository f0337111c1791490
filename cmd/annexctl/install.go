package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
)

// waitFlags are --wait and --timeout.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "follow the installation until it is "+what+", printing each stage (exit codes 3 and 4 on timeout and pending approval)")
	cmd.Flags().DurationVar(&w.timeout, "timeout", 5*time.Minute, "how long --wait follows it")
}

// follow runs cli.Wait, printing progress on the command's output: one
// redrawn line on a terminal, a line per change otherwise.
func (w *waitFlags) follow(cmd *cobra.Command, c client.WithWatch, namespace, name string, deleted bool) error {
	out := cmd.OutOrStdout()
	pp := cli.NewProgressPrinter(out, isTerminal(out))
	_, err := cli.Wait(cmd.Context(), c, cli.WaitOptions{
		Namespace: namespace, Name: name, Timeout: w.timeout, Deleted: deleted, OnProgress: pp.Print,
	})
	pp.Done()
	return err
}

// write is the body of install and upgrade: it reads -o and the
// --values files, makes the hub client, has change write the
// installation, prints it with verb ("(dry run)" added for one) and,
// with --wait, follows it until it is Ready.
func (w *waitFlags) write(cmd *cobra.Command, kubeconfig, output string, valuesFiles []string, verb string, dryRun bool,
	change func(c client.WithWatch, values [][]byte) (*v1alpha1.ExtensionInstallation, error)) error {
	out, err := cli.ParseOutput(output)
	if err != nil {
		return err
	}
	values, err := readValues(valuesFiles)
	if err != nil {
		return err
	}
	c, _, err := hubClients(kubeconfig)
	if err != nil {
		return err
	}
	inst, err := change(c, values)
	if err != nil {
		return err
	}
	if dryRun {
		verb += " (dry run)"
	}
	if err := cli.WriteObject(cmd.OutOrStdout(), out, inst, verb); err != nil || dryRun || !w.wait {
		return err
	}
	return w.follow(cmd, c, inst.Namespace, inst.Name, false)
}

// readValues reads --values files ("-" is standard input).
func readValues(files []string) ([][]byte, error) {
	var docs [][]byte
	for _, f := range files {
		var data []byte
		var err error
		if f == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(f)
		}
		if err != nil {
			return nil, cli.Usagef("--values %s: %v", f, err)
		}
		docs = append(docs, data)
	}
	return docs, nil
}

func newInstallCommand(kubeconfig *string) *cobra.Command {
	var o cli.InstallOptions
	var valuesFiles []string
	var output string
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "install EXTENSION [--version RANGE] [--channel NAME] [--cluster NAME] [-n NAMESPACE] [--values FILE] [--set KEY=VALUE] [--wait]",
		Short: "Install an extension: create an ExtensionInstallation, and with --wait follow it until it is healthy",
		Long: `install creates an ExtensionInstallation (named after the extension unless
--name says otherwise) in the namespace: Annex resolves the highest version in
--version that fits the cluster, installs its dependencies first, renders it,
passes its gates (approval policies, hooks), applies it phase by phase and waits
until it is healthy. --wait follows those stages. It is declarative: --dry-run -o yaml
prints the ExtensionInstallation, which kubectl apply -f takes as it is.`,
		Example: `  annexctl install cert-manager --version "^1.14" -n platform --wait
  annexctl install podinfo --cluster prod-eu --set replicaCount=2 --values podinfo.yaml
  annexctl install example-operator --channel fast --target-namespace example-operator
  annexctl install podinfo --dry-run -o yaml > podinfo.yaml && kubectl apply -f podinfo.yaml`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: completeArgs(1, extensionNames(kubeconfig)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return w.write(cmd, *kubeconfig, output, valuesFiles, "created", o.DryRun,
				func(c client.WithWatch, values [][]byte) (*v1alpha1.ExtensionInstallation, error) {
					o.Extension, o.Values, o.Namespace = a[0], values, namespaceOr(o.Namespace, *kubeconfig)
					return cli.Install(cmd.Context(), c, o)
				})
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "name of the ExtensionInstallation (default: the extension's name)")
	namespaceFlag(cmd, &o.Namespace, "namespace of the ExtensionInstallation (default: the kubeconfig's)")
	f.StringVar(&o.Version, "version", "", `version range, e.g. 1.14.2, "^1.14", ">=1.2 <2" (default: the highest that fits)`)
	clusterFlag(cmd, kubeconfig, &o.Cluster, "ManagedCluster to install into (default: the hub cluster)")
	channelFlag(cmd, kubeconfig, &o.Channel, "operator's catalog channel (spec.channel; default: the package's default channel)")
	f.StringVar(&o.TargetNamespace, "target-namespace", "", "namespace of the extension's objects (default: the installation's)")
	f.StringArrayVarP(&valuesFiles, "values", "f", nil, "YAML file of values (repeatable, later files win; - is stdin)")
	f.StringArrayVar(&o.Set, "set", nil, "KEY=VALUE in Helm's --set syntax, over --values (repeatable)")
	f.BoolVar(&o.DryRun, "dry-run", false, "validate with the API server and print the ExtensionInstallation instead of creating it (with -o yaml)")
	outputFlag(cmd, &output)
	w.add(cmd, "Ready")
	return cmd
}

func newUpgradeCommand(kubeconfig *string) *cobra.Command {
	var o cli.UpgradeOptions
	var valuesFiles []string
	var output string
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "upgrade INSTALLATION [--version RANGE] [--channel NAME] [--values FILE] [--set KEY=VALUE] [--reset-values] [--wait]",
		Short: "Change an installation's version range or values; with --wait follow the change until it is healthy",
		Long: `upgrade patches an ExtensionInstallation: --version replaces spec.version, and
--values and --set are merged over its values (--reset-values starts from none).
Annex then moves to the highest version in the range that fits the cluster,
through the same stages as install.`,
		Example: `  annexctl upgrade cert-manager -n platform --version "^1.15" --wait
  annexctl upgrade podinfo --set replicaCount=3`,
		Args: args(cobra.ExactArgs(1)),
		ValidArgsFunction: func(cmd *cobra.Command, a []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeArgs(1, installationNames(kubeconfig, &o.Namespace, false))(cmd, a, s)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			return w.write(cmd, *kubeconfig, output, valuesFiles, "configured", o.DryRun,
				func(c client.WithWatch, values [][]byte) (*v1alpha1.ExtensionInstallation, error) {
					o.Name, o.Values, o.Namespace = a[0], values, namespaceOr(o.Namespace, *kubeconfig)
					return cli.Upgrade(cmd.Context(), c, o)
				})
		},
	}
	f := cmd.Flags()
	namespaceFlag(cmd, &o.Namespace, "namespace of the ExtensionInstallation (default: the kubeconfig's)")
	f.StringVar(&o.Version, "version", "", "new version range (spec.version)")
	channelFlag(cmd, kubeconfig, &o.Channel, "new catalog channel of an operator (spec.channel)")
	f.StringArrayVarP(&valuesFiles, "values", "f", nil, "YAML file of values merged over the installation's (repeatable; - is stdin)")
	f.StringArrayVar(&o.Set, "set", nil, "KEY=VALUE in Helm's --set syntax (repeatable)")
	f.BoolVar(&o.ResetValues, "reset-values", false, "start from no values instead of the installation's")
	f.BoolVar(&o.DryRun, "dry-run", false, "validate with the API server and print the result instead of changing it")
	outputFlag(cmd, &output)
	w.add(cmd, "Ready")
	return cmd
}

func newUninstallCommand(kubeconfig *string) *cobra.Command {
	var namespace string
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "uninstall INSTALLATION... [-n NAMESPACE] [--wait]",
		Short: "Delete installations: Annex removes exactly what they installed (CRDs stay unless spec.uninstall.deleteCRDs)",
		Long: `uninstall deletes ExtensionInstallations. Annex removes what each installed, in
reverse dependency order; an installation other installations depend on is held
until they are gone (status.requiredBy names them). --wait follows until each is
gone.`,
		Example: "  annexctl uninstall podinfo -n team-a --wait",
		Args:    args(cobra.MinimumNArgs(1)),
		ValidArgsFunction: func(cmd *cobra.Command, a []string, s string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeArgs(1<<30, installationNames(kubeconfig, &namespace, false))(cmd, a, s)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			ns := namespaceOr(namespace, *kubeconfig)
			for _, name := range a {
				requiredBy, err := cli.Uninstall(cmd.Context(), c, ns, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "ExtensionInstallation %s/%s deleted\n", ns, name)
				if len(requiredBy) > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "  held while %s depend on it: uninstall them first\n", strings.Join(requiredBy, ", "))
				}
			}
			if !w.wait {
				return nil
			}
			for _, name := range a {
				if err := w.follow(cmd, c, ns, name, true); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "ExtensionInstallation %s/%s is gone\n", ns, name)
			}
			return nil
		},
	}
	namespaceFlag(cmd, &namespace, "namespace of the ExtensionInstallations (default: the kubeconfig's)")
	w.add(cmd, "gone")
	return cmd
}
