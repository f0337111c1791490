package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// planInstallations is how many installations each side of
// BenchmarkPlanOverhead installs.
const planInstallations = 50

// benchPackage is benchChart as an Annex package: the same four objects,
// applied by a deploy plan of four serial steps (ServiceAccount, Service,
// Deployment, Ingress), each a health gate.
func benchPackage() map[string]string {
	files := map[string]string{
		"operator.yaml": `apiVersion: kudo.dev/v1beta1
name: ` + chartName + `-pkg
operatorVersion: 1.0.0
kubernetesVersion: 1.30.0
tasks:
  - {name: serviceaccount, kind: Apply, spec: {resources: [serviceaccount.yaml]}}
  - {name: service, kind: Apply, spec: {resources: [service.yaml]}}
  - {name: deployment, kind: Apply, spec: {resources: [deployment.yaml]}}
  - {name: ingress, kind: Apply, spec: {resources: [ingress.yaml]}}
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: serviceaccount, tasks: [serviceaccount]}
          - {name: service, tasks: [service]}
          - {name: deployment, tasks: [deployment]}
          - {name: ingress, tasks: [ingress]}
`,
		"params.yaml": "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
	}
	for path, text := range benchChart().Files {
		// The chart's {{ .Release.Name }} is the package's {{ .Name }}.
		files[path] = strings.ReplaceAll(text, ".Release.Name", ".Name")
	}
	return files
}

// BenchmarkPlanOverhead times 50 installations from creation to Ready with
// `annex manager` as a subprocess, in the same run: of the system
// benchmark's 4-object chart, and of a package applying the same objects
// through a plan of four health-gated steps. The difference is what the
// plan executor costs over a chart's one-pass apply: its per-step status
// writes and health reads.
func BenchmarkPlanOverhead(b *testing.B) {
	b.Run("chart", func(b *testing.B) { benchPlanOverhead(b, false) })
	b.Run("package", func(b *testing.B) { benchPlanOverhead(b, true) })
}

func benchPlanOverhead(b *testing.B, asPackage bool) {
	ctx := context.Background()
	work := b.TempDir()
	hub := testenv.Start(b)
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(b, hub.WriteKubeconfig(kubeconfig))
	c := hub.Client
	must(b, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plans"}}))
	extension := chartName
	source := v1alpha1.CatalogSource{}
	if asPackage {
		extension = chartName + "-pkg"
		dir := filepath.Join(work, "packages", extension+"-1.0.0")
		for name, text := range benchPackage() {
			must(b, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
			must(b, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
		}
		source.Directory = &v1alpha1.DirectorySource{Path: filepath.Join(work, "packages")}
	} else {
		repo := helmrepo.NewServer(b, benchChart())
		source.Helm = &v1alpha1.HelmSource{URL: repo.URL()}
	}
	must(b, c.Create(ctx, &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "plans"}, Spec: v1alpha1.CatalogSpec{Source: source}}))
	mgr := startManager(b, work, kubeconfig)
	waitUntil(b, 2*time.Minute, func() error {
		return c.Get(ctx, client.ObjectKey{Name: extension}, &v1alpha1.Extension{})
	})

	before := requestsServed(b, hub.Config)
	start := time.Now()
	for i := range planInstallations {
		must(b, c.Create(ctx, &v1alpha1.ExtensionInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: "plans", Name: fmt.Sprintf("app-%d", i)},
			Spec:       v1alpha1.ExtensionInstallationSpec{Extension: extension},
		}))
	}
	polls := 0
	waitUntil(b, 5*time.Minute, func() error {
		polls++
		var list v1alpha1.ExtensionInstallationList
		if err := c.List(ctx, &list, client.InNamespace("plans")); err != nil {
			return err
		}
		ready := 0
		for _, inst := range list.Items {
			if meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
				ready++
			}
		}
		if ready < planInstallations {
			return fmt.Errorf("%d of %d installations Ready", ready, planInstallations)
		}
		return nil
	})
	elapsed := time.Since(start)
	served := requestsServed(b, hub.Config) - before - planInstallations - polls - 1
	b.ReportMetric(elapsed.Seconds(), "s-to-ready")
	b.ReportMetric(float64(served)/planInstallations, "req/inst")
	b.ReportMetric(mgr.Peak(b), "peak-MiB")
	b.Logf("%d installations (%s) Ready in %.2f s, %d requests; manager peak %.1f MiB; loadavg %s",
		planInstallations, extension, elapsed.Seconds(), served, mgr.Peak(b), loadavg())
}
