package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// PlanRequestOptions configure RunPlan and AbandonPlan.
type PlanRequestOptions struct {
	// Installation and Namespace name the ExtensionInstallation.
	Installation, Namespace string
	// Plan is the plan to run or abandon.
	Plan string
	// Wait follows the plan until it finishes (RunPlan) or stops
	// (AbandonPlan), at most Timeout.
	Wait    bool
	Timeout time.Duration
	// Now names the request; nil means time.Now.
	Now func() time.Time
	Out io.Writer
}

// RunPlan asks Annex to run a plan of a package installation once, by
// setting spec.plans.run with a new ID (declarative: the same change can
// be made with kubectl). The plan must be one the installed package has.
// With Wait it prints each change of the plan's state until it is
// COMPLETE (nil) or stops otherwise (an error naming the failed step).
func RunPlan(ctx context.Context, c client.Client, o PlanRequestOptions) error {
	return request(ctx, c, o, "requested plan", "spec.plans.run",
		func(p *v1alpha1.PlanRequests) **v1alpha1.PlanRequest { return &p.Run })
}

// AbandonPlan asks Annex to stop a running plan where it is, by setting
// spec.plans.abandon with a new ID. What the plan's finished steps applied
// stays, listed in the plan's status (leftBehind).
func AbandonPlan(ctx context.Context, c client.Client, o PlanRequestOptions) error {
	return request(ctx, c, o, "asked to abandon plan", "spec.plans.abandon",
		func(p *v1alpha1.PlanRequests) **v1alpha1.PlanRequest { return &p.Abandon })
}

// request sets the plan request field selects picks to o.Plan with a new
// ID and, with o.Wait, follows the plan until Annex carried the request
// out and the plan stopped running.
func request(ctx context.Context, c client.Client, o PlanRequestOptions, told, field string,
	selects func(*v1alpha1.PlanRequests) **v1alpha1.PlanRequest) error {
	inst, err := packageInstallation(ctx, c, o)
	if err != nil {
		return err
	}
	if st := findPlan(inst, o.Plan); field == "spec.plans.abandon" && !running(st.State) {
		return fmt.Errorf("plan %s of %s/%s is %s, not running: there is nothing to abandon", o.Plan, o.Namespace, o.Installation, st.State)
	}
	id := requestID(o.Now)
	patch := client.MergeFrom(inst.DeepCopy())
	if inst.Spec.Plans == nil {
		inst.Spec.Plans = &v1alpha1.PlanRequests{}
	}
	*selects(inst.Spec.Plans) = &v1alpha1.PlanRequest{Name: o.Plan, ID: id}
	if err := c.Patch(ctx, inst, patch); err != nil {
		return fmt.Errorf("setting %s of %s/%s: %w", field, o.Namespace, o.Installation, err)
	}
	fmt.Fprintf(o.Out, "%s %s of %s/%s (request %s)\n", told, o.Plan, o.Namespace, o.Installation, id)
	if !o.Wait {
		return nil
	}
	return follow(ctx, c, o, func(inst *v1alpha1.ExtensionInstallation) bool {
		done := inst.Status.PlanRequests
		if done == nil {
			return false
		}
		last := *selects(done)
		return last != nil && last.ID == id
	})
}

// PlanStatusOptions configure PrintPlans.
type PlanStatusOptions struct {
	Installation, Namespace string
	// Output is table (the default), yaml or json (status.plans).
	Output Output
	Out    io.Writer
}

// PrintPlans prints every plan of a package installation down to its
// steps: state, trigger, and the message of what waits or failed.
func PrintPlans(ctx context.Context, c client.Reader, o PlanStatusOptions) error {
	inst := &v1alpha1.ExtensionInstallation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Installation}, inst); err != nil {
		return installationError(o.Namespace, o.Installation, err)
	}
	if o.Output == OutputYAML || o.Output == OutputJSON {
		plans := inst.Status.Plans
		if plans == nil {
			plans = []v1alpha1.PlanStatus{}
		}
		return writeData(o.Out, o.Output, plans)
	}
	if len(inst.Status.Plans) == 0 {
		fmt.Fprintf(o.Out, "%s/%s has no plans: it is not a package, or it is not installed yet\n", o.Namespace, o.Installation)
		return nil
	}
	for _, p := range inst.Status.Plans {
		printPlanStatus(o.Out, p)
	}
	return nil
}

func printPlanStatus(w io.Writer, p v1alpha1.PlanStatus) {
	line := fmt.Sprintf("%s  %s", p.Name, p.State)
	if p.Revision > 0 {
		line += fmt.Sprintf("  revision %d", p.Revision)
	}
	if p.Trigger != "" {
		line += "  (" + p.Trigger + ")"
	}
	fmt.Fprintln(w, line)
	for _, ph := range p.Phases {
		fmt.Fprintf(w, "  %s  %s\n", ph.Name, ph.State)
		for _, st := range ph.Steps {
			msg := ""
			if st.Message != "" {
				msg = "  " + st.Message
			}
			fmt.Fprintf(w, "    %s  %s%s\n", st.Name, st.State, msg)
		}
	}
	for _, ref := range p.LeftBehind {
		fmt.Fprintf(w, "  left behind: %s %s\n", ref.Kind, qualified(ref))
	}
}

func qualified(ref v1alpha1.ObjectReference) string {
	if ref.Namespace == "" {
		return ref.Name
	}
	return ref.Namespace + "/" + ref.Name
}

// packageInstallation reads the installation and checks that the plan is
// one of its package's.
func packageInstallation(ctx context.Context, c client.Client, o PlanRequestOptions) (*v1alpha1.ExtensionInstallation, error) {
	inst := &v1alpha1.ExtensionInstallation{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Installation}, inst); err != nil {
		return nil, installationError(o.Namespace, o.Installation, err)
	}
	if len(inst.Status.Plans) == 0 {
		return nil, fmt.Errorf("%s/%s has no plans: only package installations have plans, and only once installed", o.Namespace, o.Installation)
	}
	if findPlan(inst, o.Plan) == nil {
		names := make([]string, 0, len(inst.Status.Plans))
		for _, p := range inst.Status.Plans {
			names = append(names, p.Name)
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%s/%s has no plan %q; its plans: %s", o.Namespace, o.Installation, o.Plan, strings.Join(names, ", "))
	}
	return inst, nil
}

func installationError(ns, name string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no ExtensionInstallation %s/%s; list them with kubectl get extensioninstallations -n %s", ns, name, ns)
	}
	return fmt.Errorf("reading ExtensionInstallation %s/%s: %w", ns, name, err)
}

// follow prints the plan's state as it changes until carried out (the
// request is recorded as done) and the plan stopped running.
func follow(ctx context.Context, c client.Reader, o PlanRequestOptions, carriedOut func(*v1alpha1.ExtensionInstallation) bool) error {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		inst := &v1alpha1.ExtensionInstallation{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Installation}, inst); err != nil {
			return installationError(o.Namespace, o.Installation, err)
		}
		st := findPlan(inst, o.Plan)
		if st != nil {
			line := fmt.Sprintf("%s: %s", st.Name, st.State)
			if st.Message != "" {
				line += ": " + st.Message
			}
			if line != last {
				fmt.Fprintln(o.Out, line)
				last = line
			}
			if carriedOut(inst) && !running(st.State) {
				if st.State == v1alpha1.PlanFatalError {
					return fmt.Errorf("plan %s of %s/%s failed: %s", o.Plan, o.Namespace, o.Installation, st.Message)
				}
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("plan %s of %s/%s did not finish within %s (it is %s); follow it with annexctl plan status -i %s -n %s",
				o.Plan, o.Namespace, o.Installation, timeout, last, o.Installation, o.Namespace)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func findPlan(inst *v1alpha1.ExtensionInstallation, name string) *v1alpha1.PlanStatus {
	for i := range inst.Status.Plans {
		if inst.Status.Plans[i].Name == name {
			return &inst.Status.Plans[i]
		}
	}
	return nil
}

func running(s v1alpha1.PlanState) bool {
	return s == v1alpha1.PlanPending || s == v1alpha1.PlanInProgress || s == v1alpha1.PlanError
}

// requestID names a request by the time it is made, which is unique
// enough for one person and reads well in status.
func requestID(now func() time.Time) string {
	if now == nil {
		now = time.Now
	}
	return now().UTC().Format("20060102-150405.000")
}
