package faults

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/testenv"
)

// threeSteps is a package whose deploy plan has three serial steps, each
// applying one ConfigMap.
var threeSteps = map[string]string{
	"operator.yaml": `apiVersion: kudo.dev/v1beta1
name: steps
operatorVersion: 0.1.0
kubernetesVersion: 1.30.0
tasks:
  - {name: one, kind: Apply, spec: {resources: [one.yaml]}}
  - {name: two, kind: Apply, spec: {resources: [two.yaml]}}
  - {name: three, kind: Apply, spec: {resources: [three.yaml]}}
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: one, tasks: [one]}
          - {name: two, tasks: [two]}
          - {name: three, tasks: [three]}
`,
	"params.yaml":          "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
	"templates/one.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-one\n",
	"templates/two.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-two\n",
	"templates/three.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-three\n",
}

// TestPlanResumesAtItsStep kills the manager right after the second step
// of a package's deploy plan ran, before its state was written: the
// status then says step one is COMPLETE and step two is not, and the next
// manager resumes there (the plan was started once) and completes the plan
// with every object in the inventory and none orphaned.
func TestPlanResumesAtItsStep(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	c := env.Client
	work := t.TempDir()
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(t, env.WriteKubeconfig(kubeconfig))
	mgr := newManagerProcess(t, work, kubeconfig)

	dir := filepath.Join(work, "packages")
	for name, content := range threeSteps {
		p := filepath.Join(dir, "steps-0.1.0", name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	const ns = "plans"
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "plans"},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Directory: &v1alpha1.DirectorySource{Path: dir}}},
	}))
	must(t, c.Create(ctx, &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "steps"},
	}))

	mgr.start(failpoint.Env(failpoint.AfterPlanStep, ns, "db", 2))
	if !mgr.awaitDeath(2 * time.Minute) {
		mgr.kill()
		t.Fatal("the manager never reached the second step of the plan")
	}
	inst := &v1alpha1.ExtensionInstallation{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, inst))
	deploy := planOf(inst, "deploy")
	if deploy == nil || len(deploy.Phases) != 1 || deploy.Phases[0].Steps[0].State != v1alpha1.PlanComplete ||
		deploy.Phases[0].Steps[1].State == v1alpha1.PlanComplete || inst.Status.Pending == nil {
		t.Fatalf("after the kill, want step one COMPLETE, step two not, a pending revision; got %+v, pending %v", deploy, inst.Status.Pending)
	}
	started := deploy.StartedAt

	mgr.start()
	defer mgr.kill()
	awaitInstallation(t, ctx, c, ns, "db", "0.1.0", "")
	must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, inst))
	deploy = planOf(inst, "deploy")
	if deploy.State != v1alpha1.PlanComplete || deploy.Revision != 1 || !deploy.StartedAt.Equal(started) {
		t.Fatalf("the plan did not resume where it was: %+v (started %v before the kill)", deploy, started)
	}
	if problems := orphans(ctx, c, ns); len(problems) > 0 {
		t.Fatalf("orphaned or duplicated objects:\n%s", strings.Join(problems, "\n"))
	}
	for _, name := range []string{"db-one", "db-two", "db-three"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
	}

	must(t, c.Delete(ctx, inst))
	awaitGone(t, ctx, c, ns, "db")
	for _, name := range []string{"db-one", "db-two", "db-three"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s after uninstall: %v", name, err)
		}
	}
}

func planOf(inst *v1alpha1.ExtensionInstallation, name string) *v1alpha1.PlanStatus {
	for i := range inst.Status.Plans {
		if inst.Status.Plans[i].Name == name {
			return &inst.Status.Plans[i]
		}
	}
	return nil
}
