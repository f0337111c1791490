package bench

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/scheme"
)

// devDatabases is how many MySQL installations BenchmarkDevPackages runs.
const devDatabases = 10

// BenchmarkDevPackages times packages on the path a user runs: `annex dev`
// with three fake nodes, then 10 installations of the built-in mysql
// package (each a deploy plan of three health-gated steps: a Secret and a
// ConfigMap, a StatefulSet with a volume claim, a backup volume claim)
// from creation to Ready; then the backup plan on every one (a Job that
// kwok completes, then a step deleting it) from the request to COMPLETE;
// then the uninstall until all are gone.
func BenchmarkDevPackages(b *testing.B) {
	ctx := b.Context()
	kubeconfig, _ := startDev(b)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	must(b, err)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	must(b, err)
	waitUntil(b, time.Minute, func() error { return c.Get(ctx, client.ObjectKey{Name: "mysql"}, &v1alpha1.Extension{}) })
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "databases"}}))

	name := func(i int) string { return fmt.Sprintf("db-%d", i) }
	b.ResetTimer()
	begin := time.Now()
	must(b, parallel(devDatabases, func(i int) error {
		return c.Create(ctx, &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: "databases", Name: name(i)},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "mysql", Version: "0.1.x",
				Values: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"DATABASE":"team%d"}`, i))}},
		})
	}))
	waitUntil(b, 5*time.Minute, func() error { return allPlans(b, c, "deploy", 1) })
	toReady := time.Since(begin)

	begin = time.Now()
	must(b, parallel(devDatabases, func(i int) error {
		inst := &v1alpha1.ExtensionInstallation{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "databases", Name: name(i)}, inst); err != nil {
			return err
		}
		patch := client.MergeFrom(inst.DeepCopy())
		inst.Spec.Plans = &v1alpha1.PlanRequests{Run: &v1alpha1.PlanRequest{Name: "backup", ID: "bench"}}
		return c.Patch(ctx, inst, patch)
	}))
	waitUntil(b, 5*time.Minute, func() error { return allPlans(b, c, "backup", 2) })
	toBackup := time.Since(begin)

	begin = time.Now()
	must(b, c.DeleteAllOf(ctx, &v1alpha1.ExtensionInstallation{}, client.InNamespace("databases")))
	waitUntil(b, 5*time.Minute, func() error {
		var list v1alpha1.ExtensionInstallationList
		if err := c.List(ctx, &list, client.InNamespace("databases")); err != nil || len(list.Items) > 0 {
			return fmt.Errorf("%d installations left (%v)", len(list.Items), err)
		}
		return nil
	})
	toDelete := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(toReady.Seconds(), "s-to-ready")
	b.ReportMetric(toBackup.Seconds(), "s-to-backup")
	b.ReportMetric(toDelete.Seconds(), "s-to-delete")
	b.Logf("annex dev: %d mysql installations Ready in %.2f s, backed up in %.2f s, gone in %.2f s; loadavg %s",
		devDatabases, toReady.Seconds(), toBackup.Seconds(), toDelete.Seconds(), loadavg())
}

// allPlans reports an error until every installation of the benchmark
// has run planName to COMPLETE for the revision and is Ready.
func allPlans(b *testing.B, c client.Client, planName string, revision int64) error {
	var list v1alpha1.ExtensionInstallationList
	if err := c.List(b.Context(), &list, client.InNamespace("databases")); err != nil {
		return err
	}
	done := 0
	for _, inst := range list.Items {
		for _, p := range inst.Status.Plans {
			if p.Name == planName && p.State == v1alpha1.PlanComplete && p.Revision >= revision &&
				meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
				done++
			}
		}
	}
	if done < devDatabases {
		return fmt.Errorf("%d of %d installations have completed %s", done, devDatabases, planName)
	}
	return nil
}
