package main

import (
	"context"
	"flag"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/hack/refdocs"
	"github.com/annex-platform/annex/internal/metrics"
)

var update = flag.Bool("update", false, "write docs/reference/manager.md instead of comparing it")

// TestReference keeps docs/reference/manager.md what the command tree
// of annex and the metrics registry make of it; `make generate` runs it
// with -update to write the page.
func TestReference(t *testing.T) {
	root := newRootCommand()
	root.InitDefaultCompletionCmd()
	// The default of --example-operator is the folder of the running
	// binary, which differs on every machine: the page says what it is.
	dev, _, err := root.Find([]string{"dev"})
	if err != nil {
		t.Fatal(err)
	}
	dev.Flags().Lookup("example-operator").DefValue = "example-operator next to annex"

	recordOneSeriesEach()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	metricsTable, err := refdocs.Metrics(families, metrics.Names())
	if err != nil {
		t.Fatal(err)
	}

	page := refdocs.Generated("the reference test of cmd/annex (go test ./cmd/annex -run TestReference -update)") +
		"# annex reference: the manager and `annex dev`\n\n" +
		"The commands and flags of the `annex` binary, generated from its command tree, and the Prometheus metrics the manager serves, generated from its registry.\n\n" +
		"- [Commands](#commands)\n- [Metrics](#metrics)\n\n" +
		"## Commands\n\n" +
		refdocs.Commands(root) +
		"## Metrics\n\n" +
		"`annex manager` serves these on `--metrics-bind-address` (`/metrics`), next to controller-runtime's own " +
		"(`controller_runtime_reconcile_total`, `controller_runtime_reconcile_time_seconds`, `workqueue_depth`, `rest_client_requests_total`, ...) " +
		"and the Go runtime's and process's (`go_*`, `process_*`). Labels are bounded: clusters (`hub` is the cluster Annex runs in), " +
		"catalogs, engines, operations, states and results, never installation names.\n\n" +
		metricsTable
	if err := refdocs.Sync("../../docs/reference/manager.md", []byte(page), *update); err != nil {
		t.Fatal(err)
	}
}

// recordOneSeriesEach records a series of every Annex metric, so that
// the registry gathers them all (a vector with no series is not
// gathered), and makes the gauges computed from the cache read one
// ManagedCluster.
func recordOneSeriesEach() {
	metrics.ObserveResolve(time.Millisecond)
	metrics.ObserveRender(v1alpha1.EngineHelm, time.Millisecond)
	metrics.ObserveApply(metrics.OpInstall, time.Millisecond)
	start := metav1.Now()
	metrics.ObservePlan(v1alpha1.EnginePackage, v1alpha1.PlanStatus{StartedAt: &start, FinishedAt: &start, State: v1alpha1.PlanComplete})
	metrics.CatalogSynced("builtin", time.Unix(0, 0))
	metrics.DriftCorrected("")
	metrics.RolloutHalted("demo", "StepFailed")
	metrics.RolloutMoved("demo", 1, 1)
	metrics.ReadFrom(oneCluster{})
}

// oneCluster is a client.Reader holding one ManagedCluster, one profile
// with a rollout, and no installation.
type oneCluster struct{ client.Reader }

func (oneCluster) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch l := list.(type) {
	case *v1alpha1.ManagedClusterList:
		l.Items = []v1alpha1.ManagedCluster{{ObjectMeta: metav1.ObjectMeta{Name: "edge"}}}
	case *v1alpha1.ExtensionProfileList:
		l.Items = []v1alpha1.ExtensionProfile{{ObjectMeta: metav1.ObjectMeta{Name: "demo"},
			Status: v1alpha1.ExtensionProfileStatus{Rollout: &v1alpha1.RolloutStatus{Revision: 1, Phase: v1alpha1.RolloutComplete}}}}
	}
	return nil
}
