// Command annexctl inspects and plans what Annex does; it changes nothing
// unless a command says so.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/cluster"
	"github.com/annex-platform/annex/internal/manager"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "annexctl:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var kubeconfig string
	root := &cobra.Command{
		Use:           "annexctl",
		Short:         "Inspect and plan Annex installations",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: $KUBECONFIG or ~/.kube/config)")
	root.AddCommand(newPlanCommand(&kubeconfig), newPreflightCommand(&kubeconfig), newPackageCommand(), newApproveCommand(&kubeconfig))
	return root
}

// hubClients builds the hub client and the cluster registry from the
// kubeconfig flag.
func hubClients(kubeconfig string) (client.Client, *cluster.Registry, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cluster.ClientConfig(cfg), client.Options{Scheme: manager.Scheme()})
	if err != nil {
		return nil, nil, err
	}
	return c, &cluster.Registry{Local: cfg, Reader: c}, nil
}

func newPreflightCommand(kubeconfig *string) *cobra.Command {
	o := cli.PreflightOptions{}
	cmd := &cobra.Command{
		Use:   "preflight --kube-version VERSION [--cluster NAME]",
		Short: "Before a cluster moves to another Kubernetes version: what each installation would do, and which installed objects that version no longer serves",
		Long: `preflight plans every installation of the cluster for the given Kubernetes
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
			o.Out = cmd.OutOrStdout()
			return cli.Preflight(cmd.Context(), c, clusters.ObserveVersion, o)
		},
	}
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "ManagedCluster to check (default: the hub cluster)")
	cmd.Flags().StringVar(&o.KubeVersion, "kube-version", "", "the Kubernetes version the cluster is going to run (required)")
	return cmd
}

func newPlanCommand(kubeconfig *string) *cobra.Command {
	o := cli.PlanOptions{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print the versions and install order Annex would choose for a cluster, or why it cannot",
		Example: `  annexctl plan
  annexctl plan --kube-version 1.34.0
  annexctl plan --set cert-manager=1.14.x --cluster prod-eu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, clusters, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			o.Out = cmd.OutOrStdout()
			return cli.Plan(cmd.Context(), c, clusters.ObserveVersion, o)
		},
	}
	cmd.Flags().StringVar(&o.Cluster, "cluster", "", "ManagedCluster to plan for (default: the hub cluster)")
	cmd.Flags().StringVar(&o.KubeVersion, "kube-version", "", "plan as if the cluster ran this Kubernetes version")
	cmd.Flags().StringArrayVar(&o.Set, "set", nil, "extension=range: plan with this range instead (repeatable)")
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
