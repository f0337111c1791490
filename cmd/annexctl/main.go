// Command annexctl finds, installs, upgrades and follows Annex
// extensions; installed as kubectl-annex it is the kubectl plugin
// `kubectl annex`. It is a thin cobra layer over internal/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/cluster"
	"github.com/annex-platform/annex/internal/scheme"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := newRootCommand(displayName(os.Args[0]))
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", root.DisplayName(), err)
	}
	os.Exit(exitCode(err))
}

// displayName is "kubectl annex" when the binary runs as the kubectl
// plugin kubectl-annex, else "annexctl".
func displayName(arg0 string) string {
	if strings.TrimSuffix(filepath.Base(arg0), ".exe") == "kubectl-annex" {
		return "kubectl annex"
	}
	return "annexctl"
}

// exitCode is cli.ExitCode, with cobra's own command-line errors (which
// are plain errors) counted as usage errors.
func exitCode(err error) int {
	if err == nil {
		return cli.ExitOK
	}
	code := cli.ExitCode(err)
	if code == cli.ExitError {
		for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "required flag", "accepts ", "requires ", "invalid argument", "flag needs an argument", "if any flags in the group"} {
			if strings.HasPrefix(err.Error(), prefix) {
				return cli.ExitUsage
			}
		}
	}
	return code
}

const rootLong = `annexctl finds extensions in Annex catalogs, installs them on the hub or on
managed clusters, follows them until they are healthy, and shows where every
installation of the fleet stands. Every change it makes is an ordinary
Kubernetes object (Catalog, ExtensionInstallation, Approval): what annexctl does,
kubectl apply can do, and --dry-run -o yaml prints the object instead.

Read commands take -o table|yaml|json. Installed as kubectl-annex on PATH, it is
also the kubectl plugin "kubectl annex".

Exit codes:
  0  success
  1  error: the message names the object and the fix (an installation that
     stalled during --wait ends here too, and a rollout that halted)
  2  usage: unknown command or flag, missing argument, bad -o
  3  --wait: not Ready (or not gone, or a rollout not Complete) within
     --timeout, or suspended or paused
  4  --wait: the change waits for an Approval (annexctl approve, or annexctl
     rollout approve for a rollout step, by someone other than its requester)`

func newRootCommand(name string) *cobra.Command {
	var kubeconfig string
	root := &cobra.Command{
		Use:           "annexctl",
		Short:         "Find, install and follow Annex extensions",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: name},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cli.Usagef("%v", err) })
	root.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: $KUBECONFIG or ~/.kube/config)")
	root.PersistentFlags().StringVar(&impersonate.UserName, "as", "", "act as this user (impersonation, as kubectl --as)")
	root.PersistentFlags().StringArrayVar(&impersonate.Groups, "as-group", nil, "act as a member of this group (repeatable; with --as)")
	root.AddCommand(
		newCatalogCommand(&kubeconfig), newSearchCommand(&kubeconfig), newShowCommand(&kubeconfig),
		newInstallCommand(&kubeconfig), newUpgradeCommand(&kubeconfig), newUninstallCommand(&kubeconfig),
		newStatusCommand(&kubeconfig), newEventsCommand(&kubeconfig),
		newResolveCommand(&kubeconfig), newPlanCommand(&kubeconfig), newPreflightCommand(&kubeconfig), newApproveCommand(&kubeconfig), newDenyCommand(&kubeconfig),
		newRolloutCommand(&kubeconfig), newAdoptCommand(&kubeconfig), newConvertCommand(), newPackageCommand(), newVersionCommand(), newConsoleCommand(&kubeconfig))
	return root
}

// impersonate is set by --as and --as-group.
var impersonate rest.ImpersonationConfig

// hubClients builds the hub client and the cluster registry from the
// kubeconfig flag (and --as). The client can watch (install --wait).
func hubClients(kubeconfig string) (client.WithWatch, *cluster.Registry, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the kubeconfig of the hub cluster: %w; pass --kubeconfig or set KUBECONFIG", err)
	}
	if impersonate.UserName != "" {
		cfg.Impersonate = impersonate
	} else if len(impersonate.Groups) > 0 {
		return nil, nil, cli.Usagef("--as-group needs --as: the user to act as")
	}
	c, err := client.NewWithWatch(cluster.ClientConfig(cfg), client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, nil, err
	}
	return c, &cluster.Registry{Local: cfg, Reader: c}, nil
}

func newPreflightCommand(kubeconfig *string) *cobra.Command {
	o := cli.PreflightOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "preflight --kube-version VERSION [--cluster NAME]",
		Short: "Before a cluster moves to another Kubernetes version: what each installation would do, and which installed objects that version no longer serves",
		Long: `preflight resolves every installation of the cluster for the given Kubernetes
version — the version it would move to, or why none fits — and lists every object
in their inventories whose API version that release removed, with what to use
instead. It changes nothing. Exit status 1 when it finds a problem.`,
		Example: `  annexctl preflight --cluster cluster-2 --kube-version 1.37.1`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, clusters, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			if o.Output, err = cli.ParseOutput(output); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			return cli.Preflight(cmd.Context(), c, clusters.ObserveVersion, o)
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "ManagedCluster to check (default: the hub cluster)")
	cmd.Flags().StringVar(&o.KubeVersion, "kube-version", "", "the Kubernetes version the cluster is going to run (required)")
	return cmd
}

func newResolveCommand(kubeconfig *string) *cobra.Command {
	o := cli.ResolveOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "resolve",
		Short: "Print the versions and install order Annex would choose for a cluster, or why it cannot",
		Example: `  annexctl resolve
  annexctl resolve --kube-version 1.34.0
  annexctl resolve --set cert-manager=1.14.x --cluster prod-eu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runResolve(cmd, *kubeconfig, o, output) },
	}
	resolveFlags(cmd, &o, &output)
	return cmd
}

// resolveFlags are the flags of annexctl resolve (and of annexctl plan
// without a subcommand, its old name).
func resolveFlags(cmd *cobra.Command, o *cli.ResolveOptions, output *string) {
	outputFlag(cmd, output)
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "ManagedCluster to resolve for (default: the hub cluster)")
	cmd.Flags().StringVar(&o.KubeVersion, "kube-version", "", "resolve as if the cluster ran this Kubernetes version")
	cmd.Flags().StringArrayVar(&o.Set, "set", nil, "extension=range: resolve with this range instead (repeatable)")
}

func runResolve(cmd *cobra.Command, kubeconfig string, o cli.ResolveOptions, output string) error {
	c, clusters, err := hubClients(kubeconfig)
	if err != nil {
		return err
	}
	if o.Output, err = cli.ParseOutput(output); err != nil {
		return err
	}
	o.Out = cmd.OutOrStdout()
	return cli.Resolve(cmd.Context(), c, clusters.ObserveVersion, o)
}

// newPlanCommand is `annexctl plan`: the plans of a package installation.
// Without a subcommand it is the old name of annexctl resolve, kept for
// one release: it says so on stderr, then resolves.
func newPlanCommand(kubeconfig *string) *cobra.Command {
	o := cli.ResolveOptions{}
	var output string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Run, abandon and follow the plans of a package installation",
		Long: `plan runs a plan of a package installation (run), stops a running one
(abandon) and prints every plan down to its steps (status).

Without a subcommand, "plan" is the old name of "resolve": it says so and
resolves. That use will be removed in the next release; use "resolve".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name := cmd.Root().DisplayName()
			fmt.Fprintf(cmd.ErrOrStderr(), "%s plan is renamed %s resolve; \"%s plan\" without a subcommand will be removed in the next release\n", name, name, name)
			return runResolve(cmd, *kubeconfig, o, output)
		},
	}
	resolveFlags(cmd, &o, &output)
	for _, f := range []string{"output", "cluster", "kube-version", "set"} {
		_ = cmd.Flags().MarkHidden(f)
	}
	cmd.AddCommand(newPlanRequestCommand(kubeconfig, "run", cli.RunPlan,
		"Run a plan of a package installation once (sets spec.plans.run)",
		"  annexctl plan run backup -i db -n team-a --wait"),
		newPlanRequestCommand(kubeconfig, "abandon", cli.AbandonPlan,
			"Stop a running plan where it is (sets spec.plans.abandon); what its finished steps applied stays",
			"  annexctl plan abandon deploy -i db -n team-a"),
		newPlanStatusCommand(kubeconfig))
	return cmd
}

// newPlanRequestCommand is `annexctl plan run|abandon PLAN`.
func newPlanRequestCommand(kubeconfig *string, verb string, do func(context.Context, client.Client, cli.PlanRequestOptions) error, short, example string) *cobra.Command {
	o := cli.PlanRequestOptions{}
	cmd := &cobra.Command{
		Use:     verb + " PLAN -i INSTALLATION [-n NAMESPACE] [--wait]",
		Short:   short,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			o.Plan, o.Out = args[0], cmd.OutOrStdout()
			if o.Namespace == "" {
				o.Namespace = defaultNamespace(*kubeconfig)
			}
			return do(cmd.Context(), c, o)
		},
	}
	cmd.Flags().StringVarP(&o.Installation, "installation", "i", "", "the ExtensionInstallation (required)")
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "its namespace (default: the kubeconfig's)")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "follow the plan until it finishes")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long --wait follows the plan")
	_ = cmd.MarkFlagRequired("installation")
	return cmd
}

// newPlanStatusCommand is `annexctl plan status`.
func newPlanStatusCommand(kubeconfig *string) *cobra.Command {
	o := cli.PlanStatusOptions{}
	var output string
	cmd := &cobra.Command{
		Use:     "status -i INSTALLATION [-n NAMESPACE]",
		Short:   "Print every plan of a package installation down to its steps",
		Example: "  annexctl plan status -i db -n team-a",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			if o.Output, err = cli.ParseOutput(output); err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			if o.Namespace == "" {
				o.Namespace = defaultNamespace(*kubeconfig)
			}
			return cli.PrintPlans(cmd.Context(), c, o)
		},
	}
	cmd.Flags().StringVarP(&o.Installation, "installation", "i", "", "the ExtensionInstallation (required)")
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "its namespace (default: the kubeconfig's)")
	_ = cmd.MarkFlagRequired("installation")
	outputFlag(cmd, &output)
	return cmd
}

// defaultNamespace is the kubeconfig's namespace, or "default".
func defaultNamespace(kubeconfig string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}
