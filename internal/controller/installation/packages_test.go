package installation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// plansPackage is a KUDO-format package whose plans each leave a mark
// (a ConfigMap) so a test can tell which ran: deploy, update, a
// parameter-triggered resize and backup, a cleanup, a plan that retries
// forever (stuck) and one that fails fatally (broken).
func plansPackage(version string, extraParams string) map[string]string {
	return map[string]string{
		"operator.yaml": `apiVersion: kudo.dev/v1beta1
name: plans
operatorVersion: ` + version + `
appVersion: "1.0"
kubernetesVersion: 1.30.0
tasks:
  - name: app
    kind: Apply
    spec: {resources: [app.yaml]}
  - name: resize
    kind: Apply
    spec: {resources: [size.yaml]}
  - name: backup
    kind: Apply
    spec: {resources: [backup.yaml]}
  - name: farewell
    kind: Apply
    spec: {resources: [farewell.yaml]}
  - name: drop-backup
    kind: Delete
    spec: {resources: [backup.yaml]}
  - name: marker
    kind: Apply
    spec: {resources: [marker.yaml]}
  - name: workers
    kind: Apply
    spec: {resources: [workers.yaml]}
  - name: migrate-run
    kind: Apply
    spec: {resources: [migration.yaml]}
  - name: migrate-done
    kind: Delete
    spec: {resources: [migration.yaml]}
  - name: retry-forever
    kind: Dummy
    spec: {wantErr: true}
  - name: fail
    kind: Dummy
    spec: {wantErr: true, fatal: true}
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: app, tasks: [app]}
          - {name: size, tasks: [resize]}
  update:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: app, tasks: [app]}
  resize:
    phases:
      - name: main
        steps:
          - {name: size, tasks: [resize]}
  backup:
    phases:
      - name: main
        steps:
          - {name: backup, tasks: [backup]}
  scale:
    phases:
      - name: main
        steps:
          - {name: workers, tasks: [workers]}
  migrate:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: run, tasks: [migrate-run]}
          - {name: done, tasks: [migrate-done]}
  stuck:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: mark, tasks: [marker]}
          - {name: wait, tasks: [retry-forever]}
  broken:
    phases:
      - name: main
        steps:
          - {name: fail, tasks: [fail]}
  cleanup:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: farewell, tasks: [farewell]}
          - {name: drop, tasks: [drop-backup]}
`,
		"params.yaml": `apiVersion: kudo.dev/v1beta1
parameters:
  - name: MESSAGE
    default: hello
  - name: SIZE
    type: integer
    default: 1
    trigger: resize
  - name: BACKUP_NAME
    default: first
    trigger: backup
  - name: WORKERS
    type: integer
    default: 0
    trigger: scale
` + extraParams,
		"templates/app.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-app
data:
  message: {{ .Params.MESSAGE | quote }}
  version: {{ .OperatorVersion | quote }}
  plan: {{ .PlanName }}
`,
		"templates/size.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-size
data:
  size: {{ .Params.SIZE | quote }}
  double: {{ mul (atoi .Params.SIZE) 2 | quote }}
`,
		"templates/backup.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-backup
data:
  name: {{ .Params.BACKUP_NAME | quote }}
`,
		"templates/farewell.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-farewell\n",
		"templates/marker.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-stuck-marker\n",
		"templates/workers.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-workers
spec:
  replicas: {{ .Params.WORKERS }}
  selector: {matchLabels: {app: workers}}
  template:
    metadata: {labels: {app: workers}}
    spec:
      containers: [{name: w, image: "registry.example/w:1"}]
`,
		"templates/migration.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-migration\n",
	}
}

// writePackage writes files under dir/<name>-<version>/.
func writePackage(t *testing.T, dir, folder string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, folder, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// setupDirectoryCatalog creates a namespace and a Catalog reading dir.
func setupDirectoryCatalog(t *testing.T, name, dir string) {
	t.Helper()
	ctx := context.Background()
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.CatalogSpec{
			Source:   v1alpha1.CatalogSource{Directory: &v1alpha1.DirectorySource{Path: dir}},
			Interval: metav1.Duration{Duration: time.Second},
		},
	}
	if err := env.Client.Create(ctx, cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cat) })
}

func packageNamespace(t *testing.T) string {
	t.Helper()
	ns := strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

func withValues(v map[string]any) func(*v1alpha1.ExtensionInstallation) {
	return func(i *v1alpha1.ExtensionInstallation) {
		raw, _ := json.Marshal(v)
		i.Spec.Values = &apiextensionsv1.JSON{Raw: raw}
	}
}

// update changes an installation with mutate, retrying on conflicts.
func update(t *testing.T, ns, name string, mutate func(*v1alpha1.ExtensionInstallation)) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		cur, err := getInstallation(t, ns, name)
		if err != nil {
			return err
		}
		mutate(cur)
		return env.Client.Update(context.Background(), cur)
	})
}

// waitPlan waits until the installation's plan is in state and returns
// the installation.
func waitPlan(t *testing.T, ns, name, planName string, state v1alpha1.PlanState, revision int64) *v1alpha1.ExtensionInstallation {
	t.Helper()
	var got *v1alpha1.ExtensionInstallation
	eventually(t, 60*time.Second, func() error {
		var err error
		if got, err = getInstallation(t, ns, name); err != nil {
			return err
		}
		for _, p := range got.Status.Plans {
			if p.Name == planName {
				if p.State != state || (revision > 0 && p.Revision != revision) {
					return fmt.Errorf("plan %s is %s (revision %d, %q), want %s (revision %d); conditions: %s",
						planName, p.State, p.Revision, p.Message, state, revision, describeConditions(got))
				}
				return nil
			}
		}
		return fmt.Errorf("plan %s not in status (%v); conditions: %s", planName, planStates(got), describeConditions(got))
	})
	return got
}

func planStates(inst *v1alpha1.ExtensionInstallation) map[string]string {
	out := map[string]string{}
	for _, p := range inst.Status.Plans {
		out[p.Name] = fmt.Sprintf("%s@%d", p.State, p.Revision)
	}
	return out
}

func configMapData(t *testing.T, ns, name, key string) string {
	t.Helper()
	cm, err := get(t, configMapGVK, ns, name)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	v, _, _ := unstructured.NestedString(cm.Object, "data", key)
	return v
}

func TestPackagePlansRunAtTheRightMoment(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	writePackage(t, dir, "plans-0.1.0", plansPackage("0.1.0", ""))
	setupDirectoryCatalog(t, ns, dir)

	// Install runs deploy, and every other plan is listed as NEVER_RUN.
	install(t, ns, "db", "plans", "")
	got := waitPlan(t, ns, "db", "deploy", v1alpha1.PlanComplete, 1)
	waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	states := planStates(got)
	for _, name := range []string{"update", "resize", "backup", "scale", "migrate", "stuck", "broken", "cleanup"} {
		if !strings.HasPrefix(states[name], string(v1alpha1.PlanNeverRun)) {
			t.Errorf("plan %s after install: %s, want NEVER_RUN", name, states[name])
		}
	}
	deploy := got.Status.Plans[0]
	for _, p := range got.Status.Plans {
		if p.Name == "deploy" {
			deploy = p
		}
	}
	if deploy.Trigger != "install" || len(deploy.Phases) != 1 || len(deploy.Phases[0].Steps) != 2 ||
		deploy.Phases[0].Steps[1].State != v1alpha1.PlanComplete {
		t.Errorf("deploy status down to its steps: %+v", deploy)
	}
	if m := configMapData(t, ns, "db-app", "plan"); m != "deploy" {
		t.Errorf("db-app written by plan %q, want deploy", m)
	}
	if d := configMapData(t, ns, "db-size", "double"); d != "2" {
		t.Errorf("sprig and KUDO's string parameters: double = %q, want 2", d)
	}

	// A parameter without a trigger runs update.
	update(t, ns, "db", withValues(map[string]any{"MESSAGE": "changed"}))
	got = waitPlan(t, ns, "db", "update", v1alpha1.PlanComplete, 2)
	if m := configMapData(t, ns, "db-app", "message"); m != "changed" {
		t.Errorf("message after update: %q", m)
	}

	// Two parameters with different triggers in one change: both plans
	// run, in params.yaml order (SIZE before BACKUP_NAME), one revision.
	update(t, ns, "db", withValues(map[string]any{"MESSAGE": "changed", "SIZE": 3, "BACKUP_NAME": "second"}))
	got = waitPlan(t, ns, "db", "backup", v1alpha1.PlanComplete, 3)
	got = waitPlan(t, ns, "db", "resize", v1alpha1.PlanComplete, 3)
	if rev := got.Status.History[0]; strings.Join(rev.Plans, ",") != "resize,backup" {
		t.Errorf("revision 3 ran plans %v, want resize then backup", rev.Plans)
	}
	if s, b := configMapData(t, ns, "db-size", "size"), configMapData(t, ns, "db-backup", "name"); s != "3" || b != "second" {
		t.Errorf("after resize and backup: size %q, backup %q", s, b)
	}
	if update := planStates(got)["update"]; update != "COMPLETE@2" {
		t.Errorf("update ran again: %s", update)
	}

	// A plan on demand, declaratively.
	update(t, ns, "db", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Plans = &v1alpha1.PlanRequests{Run: &v1alpha1.PlanRequest{Name: "backup", ID: "r1"}}
	})
	got = waitPlan(t, ns, "db", "backup", v1alpha1.PlanComplete, 4)
	if got.Status.PlanRequests == nil || got.Status.PlanRequests.Run == nil || got.Status.PlanRequests.Run.ID != "r1" {
		t.Errorf("request r1 not recorded as carried out: %+v", got.Status.PlanRequests)
	}
	waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	// A plan that runs something once and deletes it in a later step (as
	// a Job is) leaves it out of the inventory, and the installation Ready.
	update(t, ns, "db", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Plans = &v1alpha1.PlanRequests{Run: &v1alpha1.PlanRequest{Name: "migrate", ID: "m1"}}
	})
	got = waitPlan(t, ns, "db", "migrate", v1alpha1.PlanComplete, 5)
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if inventoryHas(got, "db-migration") {
		t.Errorf("the deleted migration is still in the inventory: %v", got.Status.Inventory)
	}
	if _, err := get(t, configMapGVK, ns, "db-migration"); !apierrors.IsNotFound(err) {
		t.Errorf("db-migration after its plan: %v", err)
	}

	// Deletion runs cleanup before the inventory goes: it applies a
	// farewell and deletes the backup, then everything is removed.
	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		_, err := getInstallation(t, ns, "db")
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("installation still there: %v", err)
		}
		return nil
	})
	for _, name := range []string{"db-app", "db-size", "db-backup", "db-farewell"} {
		if _, err := get(t, configMapGVK, ns, name); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s after uninstall: %v", name, err)
		}
	}
	assertEvent(t, ns, "db", "PlanFinished", "plan cleanup finished: COMPLETE")
}

func TestPackagePlanAbandonAndFatal(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	writePackage(t, dir, "plans-0.1.0", plansPackage("0.1.0", ""))
	setupDirectoryCatalog(t, ns, dir)
	install(t, ns, "db", "plans", "")
	waitPlan(t, ns, "db", "deploy", v1alpha1.PlanComplete, 1)

	// A plan stuck retrying a step (KUDO #1764) can be abandoned; what its
	// finished steps applied is listed and stays owned.
	update(t, ns, "db", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Plans = &v1alpha1.PlanRequests{Run: &v1alpha1.PlanRequest{Name: "stuck", ID: "s1"}}
	})
	waitPlan(t, ns, "db", "stuck", v1alpha1.PlanError, 2)
	update(t, ns, "db", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Plans.Abandon = &v1alpha1.PlanRequest{Name: "stuck", ID: "a1"}
	})
	got := waitPlan(t, ns, "db", "stuck", v1alpha1.PlanAbandoned, 2)
	got = waitCondition(t, got, v1alpha1.ConditionInstalled, metav1.ConditionFalse, v1alpha1.ReasonPlanAbandoned)
	stuck := findPlanStatus(got, "stuck")
	if len(stuck.LeftBehind) != 1 || stuck.LeftBehind[0].Name != "db-stuck-marker" {
		t.Errorf("left behind: %v, want the marker ConfigMap", stuck.LeftBehind)
	}
	if !inventoryHas(got, "db-stuck-marker") {
		t.Errorf("the marker is not in the inventory: %v", got.Status.Inventory)
	}

	// A step that fails fatally stops its plan in FATAL_ERROR.
	update(t, ns, "db", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Plans.Run = &v1alpha1.PlanRequest{Name: "broken", ID: "b1"}
	})
	got = waitPlan(t, ns, "db", "broken", v1alpha1.PlanFatalError, 3)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionInstalled)
	if c == nil || c.Reason != v1alpha1.ReasonPlanFailed || !strings.Contains(c.Message, "dummy task: fatal error") {
		t.Errorf("Installed after a fatal step: %+v", c)
	}

	// A change of parameters goes on from there.
	update(t, ns, "db", withValues(map[string]any{"MESSAGE": "again"}))
	got = waitPlan(t, ns, "db", "update", v1alpha1.PlanComplete, 4)
	waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	// A plan that waits (a Deployment that no controller makes Available
	// here) is superseded when the parameter goes back: its plan runs again
	// with the recorded inputs and puts back what it changed.
	update(t, ns, "db", withValues(map[string]any{"MESSAGE": "again", "WORKERS": 1}))
	waitPlan(t, ns, "db", "scale", v1alpha1.PlanInProgress, 5)
	update(t, ns, "db", withValues(map[string]any{"MESSAGE": "again", "WORKERS": 0}))
	got = waitPlan(t, ns, "db", "scale", v1alpha1.PlanComplete, 6)
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if trig := findPlanStatus(got, "scale").Trigger; !strings.Contains(trig, "back to the inputs of revision 4") {
		t.Errorf("scale trigger: %q", trig)
	}
	deploy, err := get(t, deploymentGVK, ns, "db-workers")
	if err != nil {
		t.Fatal(err)
	}
	if replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); replicas != 0 {
		t.Errorf("db-workers has %d replicas, want 0 again", replicas)
	}
}

func TestPackageUpgradeWithNewRequiredParameter(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	writePackage(t, dir, "plans-0.1.0", plansPackage("0.1.0", ""))
	setupDirectoryCatalog(t, ns, dir)
	install(t, ns, "db", "plans", "0.1.0")
	waitPlan(t, ns, "db", "deploy", v1alpha1.PlanComplete, 1)

	// 0.2.0 adds a required, immutable parameter with a default (KUDO
	// #1776, #1778): the upgrade runs update (there is no upgrade plan).
	writePackage(t, dir, "plans-0.2.0", plansPackage("0.2.0", "  - name: ENGINE\n    default: innodb\n    immutable: true\n"))
	eventually(t, 30*time.Second, func() error {
		ext := &v1alpha1.Extension{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "plans"}, ext); err != nil {
			return err
		}
		if len(ext.Spec.Versions) < 2 {
			return fmt.Errorf("catalog has %d versions", len(ext.Spec.Versions))
		}
		return nil
	})
	update(t, ns, "db", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "0.2.0" })
	got := waitPlan(t, ns, "db", "update", v1alpha1.PlanComplete, 2)
	if p := findPlanStatus(got, "update"); !strings.Contains(p.Trigger, "upgrade 0.1.0 → 0.2.0") {
		t.Errorf("update trigger %q", p.Trigger)
	}
	if v := configMapData(t, ns, "db-app", "version"); v != "0.2.0" {
		t.Errorf("db-app version after upgrade: %q", v)
	}

	// An immutable parameter cannot change: refused before anything runs.
	update(t, ns, "db", withValues(map[string]any{"ENGINE": "myisam"}))
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonValuesInvalid)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "ENGINE") {
		t.Errorf("immutable refusal does not name the parameter: %s", c.Message)
	}
	if len(got.Status.History) != 2 {
		t.Errorf("a refused change made a revision: %d revisions", len(got.Status.History))
	}
}

func findPlanStatus(inst *v1alpha1.ExtensionInstallation, name string) v1alpha1.PlanStatus {
	for _, p := range inst.Status.Plans {
		if p.Name == name {
			return p
		}
	}
	return v1alpha1.PlanStatus{}
}

func inventoryHas(inst *v1alpha1.ExtensionInstallation, name string) bool {
	for _, ref := range inst.Status.Inventory {
		if ref.Name == name {
			return true
		}
	}
	return false
}

// assertEvent waits for an event about the installation with the reason
// and a note containing text.
func assertEvent(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				if strings.Contains(e.Note, text) {
					return nil
				}
				seen = append(seen, e.Note)
			}
		}
		return fmt.Errorf("no %s event with %q about %s; seen %q", reason, text, name, seen)
	})
}

// kvBase is a base package: a config and a Service, a backup plan.
func kvBase(version, extraData string) map[string]string {
	return map[string]string{
		"operator.yaml": `apiVersion: kudo.dev/v1beta1
name: kv
operatorVersion: ` + version + `
appVersion: "7.2"
kubernetesVersion: 1.30.0
tasks:
  - {name: config, kind: Apply, spec: {resources: [config.yaml]}}
  - {name: backup, kind: Apply, spec: {resources: [backup.yaml]}}
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: config, tasks: [config]}
  backup:
    phases:
      - name: main
        steps:
          - {name: backup, tasks: [backup]}
`,
		"params.yaml": `apiVersion: kudo.dev/v1beta1
parameters:
  - name: SIZE
    description: How many shards the store has.
    default: 1
`,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-config
data:
  size: {{ .Params.SIZE | quote }}
` + extraData,
		"templates/backup.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-backup\n",
	}
}

// kvPlus extends kv: its config task copies the base's and patches it, it
// adds a load plan triggered by a new parameter, and gives SIZE a new
// default (keeping the base's description).
var kvPlus = map[string]string{
	"operator.yaml": `apiVersion: kudo.dev/v1beta1
name: kv-plus
operatorVersion: 0.1.0
kubernetesVersion: 1.30.0
extends:
  operator: kv
  version: ">=0.1.0 <1.0.0"
tasks:
  - name: config
    kind: Apply
    from: base/config
    patches: [config-patch.yaml]
  - {name: load, kind: Apply, spec: {resources: [load.yaml]}}
plans:
  load:
    phases:
      - name: main
        steps:
          - {name: load, tasks: [load]}
`,
	"params.yaml": `apiVersion: kudo.dev/v1beta1
parameters:
  - name: SIZE
    default: 2
  - name: DATA_LOCATION
    description: Where the data to load is.
    default: s3://bucket/first
    trigger: load
`,
	"templates/config-patch.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-config
  annotations:
    patched-by: kv-plus
data:
  extended: "yes"
`,
	"templates/load.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-load
data:
  from: {{ .Params.DATA_LOCATION | quote }}
`,
}

func TestPackageExtendsABaseFromAnotherCatalog(t *testing.T) {
	ns := packageNamespace(t)
	bases, exts := t.TempDir(), t.TempDir()
	writePackage(t, bases, "kv-0.1.0", kvBase("0.1.0", ""))
	writePackage(t, exts, "kv-plus-0.1.0", kvPlus)
	setupDirectoryCatalog(t, ns+"-bases", bases)
	setupDirectoryCatalog(t, ns+"-exts", exts)

	install(t, ns, "store", "kv-plus", "")
	got := waitPlan(t, ns, "store", "deploy", v1alpha1.PlanComplete, 1)
	waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	cm, err := get(t, configMapGVK, ns, "store-config")
	if err != nil {
		t.Fatal(err)
	}
	if cm.GetAnnotations()["patched-by"] != "kv-plus" || configMapData(t, ns, "store-config", "extended") != "yes" {
		t.Errorf("the extension's patch is not applied: %v", cm.Object)
	}
	if size := configMapData(t, ns, "store-config", "size"); size != "2" {
		t.Errorf("SIZE = %q, want the extension's default 2", size)
	}
	// Both the base's plan and the extension's are there.
	if st := planStates(got); st["backup"] != "NEVER_RUN@0" || st["load"] != "NEVER_RUN@0" {
		t.Errorf("plans of the merged package: %v", st)
	}

	// The extension's parameter triggers its plan.
	update(t, ns, "store", withValues(map[string]any{"DATA_LOCATION": "s3://bucket/second"}))
	waitPlan(t, ns, "store", "load", v1alpha1.PlanComplete, 2)
	if from := configMapData(t, ns, "store-load", "from"); from != "s3://bucket/second" {
		t.Errorf("load plan wrote %q", from)
	}

	// A new base version within the range reaches the extension: its
	// content changed, so deploy (no upgrade or update plan) runs again.
	writePackage(t, bases, "kv-0.2.0", kvBase("0.2.0", "  engine: v2\n"))
	got = waitPlan(t, ns, "store", "deploy", v1alpha1.PlanComplete, 3)
	if engine := configMapData(t, ns, "store-config", "engine"); engine != "v2" {
		t.Errorf("the new base's template did not reach the extension: engine = %q", engine)
	}
	if extended := configMapData(t, ns, "store-config", "extended"); extended != "yes" {
		t.Errorf("the patch is lost after the base update: %q", extended)
	}
	if trig := findPlanStatus(got, "deploy").Trigger; !strings.Contains(trig, "a new base version") {
		t.Errorf("deploy trigger after the base update: %q", trig)
	}
}

// A patch that matches no resource of its task is not silently dropped:
// the installation says which patch and which task.
func TestPackagePatchMatchingNothingIsReported(t *testing.T) {
	ns := packageNamespace(t)
	bases, exts := t.TempDir(), t.TempDir()
	writePackage(t, bases, "kv-0.1.0", kvBase("0.1.0", ""))
	files := map[string]string{}
	for k, v := range kvPlus {
		files[k] = v
	}
	files["templates/config-patch.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: no-such-map\ndata: {x: y}\n"
	writePackage(t, exts, "kv-plus-0.1.0", files)
	setupDirectoryCatalog(t, ns+"-bases", bases)
	setupDirectoryCatalog(t, ns+"-exts", exts)

	install(t, ns, "store", "kv-plus", "")
	got := waitPlan(t, ns, "store", "deploy", v1alpha1.PlanComplete, 1)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionWarnings)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "config-patch.yaml") || !strings.Contains(c.Message, "config") {
		t.Fatalf("Warnings condition: %+v", c)
	}
}

// A package whose target namespace does not exist creates it, records it,
// and removes it with the rest.
func TestPackageCreatesItsTargetNamespace(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	writePackage(t, dir, "plans-0.1.0", plansPackage("0.1.0", ""))
	setupDirectoryCatalog(t, ns, dir)
	target := ns + "-target"
	install(t, ns, "db", "plans", "", func(i *v1alpha1.ExtensionInstallation) { i.Spec.TargetNamespace = target })
	got := waitPlan(t, ns, "db", "deploy", v1alpha1.PlanComplete, 1)
	waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if m := configMapData(t, target, "db-app", "plan"); m != "deploy" {
		t.Errorf("db-app in %s: %q", target, m)
	}
	if !inventoryHas(got, target) {
		t.Errorf("the target namespace is not in the inventory: %v", got.Status.Inventory)
	}
	if err := env.Client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		n := &corev1.Namespace{}
		err := env.Client.Get(context.Background(), client.ObjectKey{Name: target}, n)
		if apierrors.IsNotFound(err) || (err == nil && !n.DeletionTimestamp.IsZero()) {
			return nil
		}
		return fmt.Errorf("namespace %s still there: %v", target, err)
	})
}
