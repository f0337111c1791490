package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
)

// newRolloutCommand is `annexctl rollout status|history|approve|pause|
// resume|abort|undo PROFILE`.
func newRolloutCommand(kubeconfig *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Follow and steer how a profile's changes reach its clusters, step by step",
		Long: `Every change of an ExtensionProfile becomes a revision (a ControllerRevision in
the profile's spec.namespace), which the manager rolls out to the profile's
clusters in the steps of spec.rollout: canary first, then larger waves, each with
a failure budget, a soak time and, if asked, an approval. The rollout commands
show where it stands and steer it; each writes one field of the profile (or
creates one Approval), so kubectl can do the same.`,
		Example: `  annexctl rollout status base-platform --wait
  annexctl rollout history base-platform
  annexctl rollout approve base-platform
  annexctl rollout undo base-platform`,
	}
	cmd.AddCommand(newRolloutStatusCommand(kubeconfig), newRolloutHistoryCommand(kubeconfig),
		newRolloutApproveCommand(kubeconfig),
		newRolloutPauseCommand(kubeconfig, true), newRolloutPauseCommand(kubeconfig, false),
		newRolloutAbortCommand(kubeconfig), newRolloutUndoCommand(kubeconfig))
	return cmd
}

// profileArg completes the one PROFILE argument with profile names.
func profileArg(kubeconfig *string) cobra.CompletionFunc {
	return completeArgs(1, func(cmd *cobra.Command) ([]string, error) {
		c, _, err := hubClients(*kubeconfig)
		if err != nil {
			return nil, err
		}
		return cli.ProfileNames(cmd.Context(), c)
	})
}

func newRolloutStatusCommand(kubeconfig *string) *cobra.Command {
	var output string
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status PROFILE [--wait [--timeout D]]",
		Short: "Show where a profile's rollout stands: revision, phase, step, clusters per state, failures",
		Long: `status prints the rollout of the profile's newest revision from the profile alone
(spec.rollout and status.rollout; no cluster is listed, however large the fleet):
the strategy, the revision and the stable one, the phase, the step in progress,
how many clusters are in each state, up to 10 failed clusters and 10 waiting for a
maintenance window with why, and the steps.

With --wait it follows the rollout, one line per change, until it is Complete
(exit 0), as kubectl rollout status does. It stops with exit code 1 when the
rollout is Halted or RolledBack (with the reason), 4 when a step waits for an
Approval (annexctl rollout approve), and 3 when it is paused or --timeout passes.`,
		Example: `  annexctl rollout status base-platform
  annexctl rollout status base-platform --wait --timeout 30m
  annexctl rollout status base-platform -o json`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: profileArg(kubeconfig),
		RunE: func(cmd *cobra.Command, a []string) error {
			o, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !wait {
				v, err := cli.Rollout(cmd.Context(), c, a[0])
				if err != nil {
					return err
				}
				return cli.WriteRollout(out, o, v)
			}
			wo := cli.RolloutWaitOptions{Profile: a[0], Timeout: timeout}
			if o == cli.OutputTable {
				wo.OnProgress = func(v *cli.RolloutView) { fmt.Fprintln(out, cli.RolloutLine(v)) }
			}
			v, err := cli.WaitRollout(cmd.Context(), c, wo)
			if o != cli.OutputTable && v != nil {
				if werr := cli.WriteRollout(out, o, v); werr != nil && err == nil {
					err = werr
				}
			}
			if err == nil && o == cli.OutputTable {
				fmt.Fprintf(out, "the rollout of revision %d of profile %s is Complete\n", v.Revision, v.Profile)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the rollout until it is Complete, Halted or RolledBack")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait follows the rollout")
	outputFlag(cmd, &output)
	return cmd
}

func newRolloutHistoryCommand(kubeconfig *string) *cobra.Command {
	var output string
	o := cli.RolloutHistoryOptions{}
	cmd := &cobra.Command{
		Use:   "history PROFILE [--revision N]",
		Short: "List a profile's revisions: change-cause and each extension's version, marking the one rolled out and the stable one",
		Long: `history lists the revisions the profile keeps (spec.revisionHistoryLimit), oldest
first: the change-cause (the profile's annotation kubernetes.io/change-cause when
the revision was made) and each extension as name@version, the catalog version
the revision targets (name@range when no catalog version was in the range). The
ROLLOUT column marks the revision being rolled out, with its phase, and the stable
one, which a halted rollout returns clusters to. --revision N prints one revision
in full.`,
		Example: `  annexctl rollout history base-platform
  annexctl rollout history base-platform --revision 2`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: profileArg(kubeconfig),
		RunE: func(cmd *cobra.Command, a []string) error {
			out, err := cli.ParseOutput(output)
			if err != nil {
				return err
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			o.Profile = a[0]
			revs, err := cli.RolloutHistory(cmd.Context(), c, o)
			if err != nil {
				return err
			}
			if o.Revision != 0 {
				return cli.WriteRevision(cmd.OutOrStdout(), out, o.Profile, revs[0])
			}
			return cli.WriteRolloutHistory(cmd.OutOrStdout(), out, o.Profile, revs)
		},
	}
	cmd.Flags().Int64Var(&o.Revision, "revision", 0, "print this revision in full")
	outputFlag(cmd, &output)
	return cmd
}

func newRolloutApproveCommand(kubeconfig *string) *cobra.Command {
	o := cli.RolloutApproveOptions{}
	cmd := &cobra.Command{
		Use:   "approve PROFILE [--step NAME] [--revision N] [--deny --reason TEXT]",
		Short: "Let a rollout step that requires approval start, or deny it",
		Long: `approve creates an Approval in the profile's spec.namespace naming the profile, a
revision and a step of its rollout (one with requireApproval); the manager then
starts the step. By default it approves the step the rollout waits at, of the
revision rolled out; it refuses when the rollout waits for no approval, unless
--step names a later step to approve ahead of time. The API server records you as
the approver; the manager does not count an approval by whoever last changed the
profile. --deny creates the Approval with decision Deny instead: the step does not
start.`,
		Example: `  annexctl rollout approve base-platform
  annexctl rollout approve base-platform --step prod --revision 4
  annexctl rollout approve base-platform --deny --reason "freeze until Monday"`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: profileArg(kubeconfig),
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.Reason != "" && !o.Deny {
				return cli.Usagef("--reason goes with --deny: it tells the requester why")
			}
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			o.Profile, o.Out = a[0], cmd.OutOrStdout()
			return cli.ApproveRolloutStep(cmd.Context(), c, o)
		},
	}
	cmd.Flags().StringVar(&o.Step, "step", "", "the step to approve (default: the step the rollout waits at)")
	cmd.Flags().Int64Var(&o.Revision, "revision", 0, "the revision (default: status.rollout.revision, the one rolled out)")
	cmd.Flags().BoolVar(&o.Deny, "deny", false, "deny the step instead: it does not start")
	cmd.Flags().StringVar(&o.Reason, "reason", "", "why, with --deny")
	return cmd
}

// newRolloutPauseCommand is pause (paused) or resume.
func newRolloutPauseCommand(kubeconfig *string, paused bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pause PROFILE",
		Short: "Stop a profile's rollout from changing more clusters (sets spec.rollout.paused)",
		Long: `pause sets spec.rollout.paused: the rollout changes no more clusters; the clusters
being changed finish. annexctl rollout resume clears it. A profile without
spec.rollout rolls out all at once and cannot be paused.`,
		Example:           `  annexctl rollout pause base-platform`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: profileArg(kubeconfig),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			return cli.SetRolloutPaused(cmd.Context(), c, a[0], paused, cmd.OutOrStdout())
		},
	}
	if !paused {
		cmd.Use = "resume PROFILE"
		cmd.Short = "Let a paused rollout go on (clears spec.rollout.paused)"
		cmd.Long = `resume clears spec.rollout.paused: the rollout goes on where it stopped.`
		cmd.Example = `  annexctl rollout resume base-platform`
	}
	return cmd
}

func newRolloutAbortCommand(kubeconfig *string) *cobra.Command {
	return &cobra.Command{
		Use:   "abort PROFILE",
		Short: "Halt the rollout of the revision being rolled out (and roll it back, with onFailure Rollback)",
		Long: `abort sets the profile's annotation annex.dev/rollout-abort to the revision being
rolled out (status.rollout.revision): the manager halts that revision's rollout
and, with spec.rollout.onFailure Rollback (the default), returns the clusters it
changed to the revision they ran before; with Pause it leaves them for inspection.
To go back to an earlier revision after a rollout completed, use undo.`,
		Example:           `  annexctl rollout abort base-platform`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: profileArg(kubeconfig),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			return cli.AbortRollout(cmd.Context(), c, a[0], cmd.OutOrStdout())
		},
	}
}

func newRolloutUndoCommand(kubeconfig *string) *cobra.Command {
	o := cli.RolloutUndoOptions{}
	cmd := &cobra.Command{
		Use:   "undo PROFILE [--to-revision N]",
		Short: "Roll out an earlier revision again, in the profile's steps",
		Long: `undo writes an earlier revision's extensions into the profile's spec.extensions,
each version pinned to the version that revision targeted, and sets the annotation
kubernetes.io/change-cause to "annexctl rollout undo to revision N". The manager
makes that a new revision and rolls it out like any change: in the steps of
spec.rollout, with their budgets, soak times and approvals. By default it goes back
to the stable revision, else the one before the revision rolled out. It fails
without writing if the profile changed while it was read.`,
		Example: `  annexctl rollout undo base-platform
  annexctl rollout undo base-platform --to-revision 2`,
		Args:              args(cobra.ExactArgs(1)),
		ValidArgsFunction: profileArg(kubeconfig),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, _, err := hubClients(*kubeconfig)
			if err != nil {
				return err
			}
			o.Profile, o.Out = a[0], cmd.OutOrStdout()
			_, err = cli.UndoRollout(cmd.Context(), c, o)
			return err
		},
	}
	cmd.Flags().Int64Var(&o.ToRevision, "to-revision", 0, "the revision to go back to (default: the stable one, else the one before the revision rolled out)")
	return cmd
}
