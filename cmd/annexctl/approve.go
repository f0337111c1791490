package main

import (
	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
)

// newApproveCommand is `annexctl approve INSTALLATION`.
func newApproveCommand(kubeconfig *string) *cobra.Command {
	return newDecisionCommand(kubeconfig, false)
}

// newDenyCommand is `annexctl deny INSTALLATION`.
func newDenyCommand(kubeconfig *string) *cobra.Command {
	return newDecisionCommand(kubeconfig, true)
}

// newDecisionCommand is approve, or deny when deny is set: the same
// review of the pending change, then an Approval of its digest with that
// decision.
func newDecisionCommand(kubeconfig *string, deny bool) *cobra.Command {
	o := cli.ApproveOptions{Deny: deny}
	var output string
	cmd := &cobra.Command{
		Use:   "approve INSTALLATION [-n NAMESPACE] [--digest DIGEST]",
		Short: "Show an installation's change that waits for approval, and approve exactly that change",
		Long: `approve prints the change an ExtensionInstallation waits to apply — versions,
how its permissions and CRDs change, and which ApprovalPolicy requires approval —
and creates an Approval of its digest: that change only. New values or another
version make another digest, which needs another approval. The API server records
you as the approver; Annex does not count an approval by whoever requested the
change. Pass --digest (the one the Ready condition names) to approve only what
you reviewed: approve refuses when the pending change is another one.`,
		Example: `  annexctl approve podinfo -n team-a
  annexctl approve podinfo -n team-a --digest sha256:3f1c…`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			ns := o.Namespace
			if ns == "" {
				ns = defaultNamespace(*kubeconfig)
			}
			names, err := cli.PendingApprovals(cmd.Context(), c, ns)
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			if o.Output, err = cli.ParseOutput(output); err != nil {
				return err
			}
			o.Installation, o.Out = args[0], cmd.OutOrStdout()
			if o.Namespace == "" {
				o.Namespace = defaultNamespace(*kubeconfig)
			}
			return cli.Approve(cmd.Context(), c, o)
		},
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "its namespace (default: the kubeconfig's)")
	cmd.Flags().StringVar(&o.Digest, "digest", "", "approve only if the pending change has this digest")
	outputFlag(cmd, &output)
	if deny {
		cmd.Use = "deny INSTALLATION [-n NAMESPACE] [--digest DIGEST] [--reason TEXT]"
		cmd.Short = "Show an installation's change that waits for approval, and deny exactly that change"
		cmd.Long = `deny prints the change an ExtensionInstallation waits to apply, as approve
does, and creates an Approval of its digest with decision Deny: Annex refuses that
change — the installation stops with reason ApprovalDenied, quoting --reason — and
applies nothing of it. The requester goes on by changing spec.version or
spec.values (another change, reviewed again); deleting the denying Approval has the
same change reviewed again. A denial outweighs any approval of the same digest, and
the requester may deny (withdraw) their own change.`
		cmd.Example = `  annexctl deny podinfo -n team-a --reason "no major upgrades during the freeze"
  annexctl deny podinfo -n team-a --digest sha256:3f1c…`
		cmd.Flags().Lookup("digest").Usage = "deny only if the pending change has this digest"
		cmd.Flags().StringVar(&o.Reason, "reason", "", "why, for the requester: quoted in the installation's Ready condition")
	}
	return cmd
}
