package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// WaitOptions configure Wait.
type WaitOptions struct {
	Namespace, Name string
	// Timeout bounds the wait; 0 means 5 minutes.
	Timeout time.Duration
	// Deleted waits for the installation to be gone (uninstall) instead
	// of Ready.
	Deleted bool
	// OnProgress is called with the progress each time it changes
	// (stage, state, reason, message or plan step); it may be nil.
	OnProgress func(Progress)
}

// Wait watches one installation (a LIST then a WATCH of that name, again
// after the API server ends a watch) until it is Ready for its current
// generation, or gone with o.Deleted, and returns the last progress.
// Outcomes other than success are *ExitCodeError: ExitError when Annex
// stopped (Stalled; the message is the condition's, which names the
// fix), ExitApprovalPending at once when the change needs an Approval,
// ExitNotReady when o.Timeout passes.
func Wait(ctx context.Context, c client.WithWatch, o WaitOptions) (Progress, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := o.Namespace + "/" + o.Name
	var last Progress
	seen := false
	// observe reports a change and says whether the wait is over.
	observe := func(inst *v1alpha1.ExtensionInstallation) (bool, error) {
		p := ProgressOf(inst)
		if !seen || !sameProgress(p, last) {
			seen, last = true, p
			if o.OnProgress != nil {
				o.OnProgress(p)
			}
		}
		if o.Deleted {
			return false, nil
		}
		switch p.State {
		case ProgressDone:
			return true, nil
		case ProgressFailed:
			return true, &ExitCodeError{Code: ExitError, Err: fmt.Errorf("%s stopped at %s: %s: %s", name, p.Stage, p.Reason, p.Message)}
		case ProgressApprovalPending:
			return true, &ExitCodeError{Code: ExitApprovalPending, Err: fmt.Errorf(
				"%s waits for approval: %s; annexctl status %s -n %s follows it",
				name, withApproveAdvice(p.Message, o.Namespace, o.Name), o.Name, o.Namespace)}
		case ProgressSuspended:
			return true, &ExitCodeError{Code: ExitNotReady, Err: fmt.Errorf("%s is suspended (spec.suspend); it will not become Ready until spec.suspend is false", name)}
		}
		return false, nil
	}
	for {
		var list v1alpha1.ExtensionInstallationList
		sel := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", o.Name)}
		err := c.List(ctx, &list, client.InNamespace(o.Namespace), sel)
		if err != nil {
			return last, waitError(ctx, err, name, timeout, last, o.Deleted)
		}
		if len(list.Items) == 0 {
			if o.Deleted {
				return last, nil
			}
			return last, installationError(o.Namespace, o.Name, apierrors.NewNotFound(v1alpha1.GroupVersion.WithResource("extensioninstallations").GroupResource(), o.Name))
		}
		if done, err := observe(&list.Items[0]); done {
			return last, err
		}
		w, err := c.Watch(ctx, &v1alpha1.ExtensionInstallationList{}, client.InNamespace(o.Namespace), sel,
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true}})
		if err != nil {
			return last, waitError(ctx, err, name, timeout, last, o.Deleted)
		}
		done, err := drain(ctx, w, func() (bool, error) {
			if o.Deleted {
				return true, nil
			}
			return true, fmt.Errorf("the installation was deleted while waiting for it")
		}, observe)
		w.Stop()
		if done || ctx.Err() != nil {
			if err == nil && ctx.Err() != nil {
				err = waitError(ctx, ctx.Err(), name, timeout, last, o.Deleted)
			}
			return last, err
		}
	}
}

// drain reads watch events until the wait is over (done) or the watch
// ends (done false: list and watch again). It calls observe with each
// object added or modified, and deleted when the object is deleted; both
// say whether the wait is over, and how.
func drain[T client.Object](ctx context.Context, w watch.Interface, deleted func() (bool, error), observe func(T) (bool, error)) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return deleted()
			case watch.Added, watch.Modified:
				if obj, ok := ev.Object.(T); ok {
					if done, err := observe(obj); done {
						return true, err
					}
				}
			case watch.Error:
				return false, nil
			}
		}
	}
}

func waitError(ctx context.Context, err error, name string, timeout time.Duration, last Progress, deleted bool) error {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		what := "Ready"
		if deleted {
			what = "gone"
		}
		msg := fmt.Sprintf("%s was not %s within %s: it is at %s", name, what, timeout, last.Stage)
		if last.Reason != "" {
			msg += " (" + last.Reason + ": " + last.Message + ")"
		}
		return &ExitCodeError{Code: ExitNotReady, Err: fmt.Errorf("%s; follow it with annexctl status", msg)}
	}
	return fmt.Errorf("watching %s: %w", name, err)
}

func sameProgress(a, b Progress) bool {
	if a.Stage != b.Stage || a.State != b.State || a.Reason != b.Reason || a.Message != b.Message {
		return false
	}
	if (a.Plan == nil) != (b.Plan == nil) {
		return false
	}
	return a.Plan == nil || *a.Plan == *b.Plan
}
