package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// plan run and abandon write requests into the spec, refuse plans the
// package does not have and plans that do not run, and plan status prints
// the tree of states.
func TestPlanRequests(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "mysql"},
	}
	if err := env.Client.Create(ctx, inst); err != nil {
		t.Fatal(err)
	}
	inst.Status.Plans = []v1alpha1.PlanStatus{
		{Name: "deploy", State: v1alpha1.PlanInProgress, Revision: 1, Trigger: "install", Phases: []v1alpha1.PhaseStatus{{
			Name: "main", State: v1alpha1.PlanInProgress, Steps: []v1alpha1.StepStatus{
				{Name: "app", State: v1alpha1.PlanComplete},
				{Name: "wait", State: v1alpha1.PlanError, Message: "task wait: boom; retrying"},
			}}}},
		{Name: "backup", State: v1alpha1.PlanNeverRun},
	}
	if err := env.Client.Status().Update(ctx, inst); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) }
	opts := func(planName string) cli.PlanRequestOptions {
		return cli.PlanRequestOptions{Installation: "db", Namespace: "default", Plan: planName, Now: now, Out: &bytes.Buffer{}}
	}

	// A plan the package does not have is refused, listing those it has.
	if err := cli.RunPlan(ctx, env.Client, opts("restore")); err == nil || !strings.Contains(err.Error(), "backup, deploy") {
		t.Fatalf("unknown plan: %v", err)
	}
	// A plan that is not running cannot be abandoned.
	if err := cli.AbandonPlan(ctx, env.Client, opts("backup")); err == nil || !strings.Contains(err.Error(), "NEVER_RUN") {
		t.Fatalf("abandon of a plan that does not run: %v", err)
	}

	if err := cli.RunPlan(ctx, env.Client, opts("backup")); err != nil {
		t.Fatal(err)
	}
	if err := cli.AbandonPlan(ctx, env.Client, opts("deploy")); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.ExtensionInstallation{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(inst), got); err != nil {
		t.Fatal(err)
	}
	want := &v1alpha1.PlanRequests{
		Run:     &v1alpha1.PlanRequest{Name: "backup", ID: "20261123-100000.000"},
		Abandon: &v1alpha1.PlanRequest{Name: "deploy", ID: "20261123-100000.000"},
	}
	if got.Spec.Plans == nil || *got.Spec.Plans.Run != *want.Run || *got.Spec.Plans.Abandon != *want.Abandon {
		t.Fatalf("spec.plans = %+v, want %+v", got.Spec.Plans, want)
	}

	var out bytes.Buffer
	if err := cli.PrintPlans(ctx, env.Client, cli.PlanStatusOptions{Installation: "db", Namespace: "default", Out: &out}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"deploy  IN_PROGRESS  revision 1  (install)", "    wait  ERROR  task wait: boom; retrying", "backup  NEVER_RUN"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("plan status lacks %q:\n%s", line, out.String())
		}
	}
}
