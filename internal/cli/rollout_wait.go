package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// RolloutWaitOptions configure WaitRollout.
type RolloutWaitOptions struct {
	Profile string
	// Timeout bounds the wait; 0 means 10 minutes.
	Timeout time.Duration
	// OnProgress is called with the rollout each time its RolloutLine
	// changes; it may be nil.
	OnProgress func(*RolloutView)
}

// WaitRollout watches one profile (a LIST then a WATCH of that name,
// again after the API server ends a watch) until the manager has seen
// its latest spec and its rollout is Complete, and returns the last
// view. Like `kubectl rollout status`, other ends are *ExitCodeError:
// ExitError when the rollout is Halted or RolledBack (the message gives
// the reason), ExitApprovalPending when a step waits for an Approval,
// ExitNotReady when it is paused or o.Timeout passes.
func WaitRollout(ctx context.Context, c client.WithWatch, o RolloutWaitOptions) (*RolloutView, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last *RolloutView
	lastLine := ""
	observe := func(p *v1alpha1.ExtensionProfile) (bool, error) {
		v := RolloutOf(p)
		if line := RolloutLine(v); last == nil || line != lastLine {
			lastLine = line
			if o.OnProgress != nil {
				o.OnProgress(v)
			}
		}
		last = v
		return RolloutEnded(v)
	}
	sel := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", o.Profile)}
	for {
		var list v1alpha1.ExtensionProfileList
		if err := c.List(ctx, &list, sel); err != nil {
			return last, rolloutWaitError(ctx, err, o.Profile, timeout, lastLine)
		}
		if len(list.Items) == 0 {
			return last, fmt.Errorf("no ExtensionProfile %q; list them with kubectl get extensionprofiles", o.Profile)
		}
		if done, err := observe(&list.Items[0]); done {
			return last, err
		}
		w, err := c.Watch(ctx, &v1alpha1.ExtensionProfileList{}, sel,
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true}})
		if err != nil {
			return last, rolloutWaitError(ctx, err, o.Profile, timeout, lastLine)
		}
		done, err := drain(ctx, w, func() (bool, error) {
			return true, fmt.Errorf("ExtensionProfile %s was deleted while waiting for its rollout", o.Profile)
		}, observe)
		w.Stop()
		if done {
			return last, err
		}
		if ctx.Err() != nil {
			return last, rolloutWaitError(ctx, ctx.Err(), o.Profile, timeout, lastLine)
		}
	}
}

// RolloutEnded says whether `rollout status --wait` stops at v, and with
// which error (nil: Complete); pure. It goes on while the manager has
// not seen the latest spec, nor made a first revision.
func RolloutEnded(v *RolloutView) (bool, error) {
	if !v.Observed || !v.Started {
		return false, nil
	}
	what := fmt.Sprintf("the rollout of revision %d of profile %s", v.Revision, v.Profile)
	switch v.Phase {
	case v1alpha1.RolloutComplete:
		return true, nil
	case v1alpha1.RolloutHalted, v1alpha1.RolloutRolledBack:
		msg := fmt.Sprintf("%s is %s at step %s: %s", what, v.Phase, orDash(v.StepName), orDash(v.HaltReason))
		if v.Message != "" {
			msg += ": " + v.Message
		}
		return true, &ExitCodeError{Code: ExitError, Err: errors.New(msg)}
	case v1alpha1.RolloutWaitingForApproval:
		return true, &ExitCodeError{Code: ExitApprovalPending, Err: fmt.Errorf(
			"%s waits for approval of step %s; someone other than who changed the profile runs: annexctl rollout approve %s", what, v.StepName, v.Profile)}
	case v1alpha1.RolloutPaused:
		return true, &ExitCodeError{Code: ExitNotReady, Err: fmt.Errorf(
			"%s is paused (spec.rollout.paused) at step %s; it will not complete until annexctl rollout resume %s", what, orDash(v.StepName), v.Profile)}
	}
	return false, nil
}

func rolloutWaitError(ctx context.Context, err error, profile string, timeout time.Duration, last string) error {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		if last == "" {
			last = "not read yet"
		}
		return &ExitCodeError{Code: ExitNotReady, Err: fmt.Errorf(
			"the rollout of profile %s was not Complete within %s: %s; follow it with annexctl rollout status %s", profile, timeout, last, profile)}
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no ExtensionProfile %q; list them with kubectl get extensionprofiles", profile)
	}
	return fmt.Errorf("watching ExtensionProfile %s: %w", profile, err)
}

// RolloutLine is one line of where a rollout stands, as --wait prints
// it: "revision 3: Progressing, step 2/3 prod-eu: 2 done, 1 in progress,
// 5 pending".
func RolloutLine(v *RolloutView) string {
	if !v.Started {
		return "no revision yet: waiting for the manager"
	}
	line := fmt.Sprintf("revision %d: %s", v.Revision, v.Phase)
	if v.StepName != "" {
		line += fmt.Sprintf(", step %d/%d %s", v.Step+1, v.StepCount, v.StepName)
	}
	line += ": " + CountsLine(v.Counts, false)
	if !v.Observed {
		line += " (the manager has not seen the latest change yet)"
	}
	return line
}

// CountsLine prints the clusters per state, "2 done, 1 failed"; with all
// set, every state including those with no cluster.
func CountsLine(c v1alpha1.RolloutCounts, all bool) string {
	var parts []string
	for _, s := range []struct {
		n    int32
		name string
	}{
		{c.Pending, "pending"}, {c.InProgress, "in progress"}, {c.WaitingForWindow, "waiting for a window"},
		{c.WaitingForApproval, "waiting for approval"}, {c.Done, "done"}, {c.Failed, "failed"},
		{c.Skipped, "skipped"}, {c.RolledBack, "rolled back"},
	} {
		if s.n > 0 || (all && s.name != "rolled back") {
			parts = append(parts, fmt.Sprintf("%d %s", s.n, s.name))
		}
	}
	if len(parts) == 0 {
		return "no clusters"
	}
	return strings.Join(parts, ", ")
}
