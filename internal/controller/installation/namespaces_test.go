package installation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// admissionChart has the shape of the admission-webhook hooks that
// ingress controllers and Prometheus-operator charts ship: a
// ServiceAccount, Role and RoleBinding (hooks of pre- and post-install
// and upgrade) and a certificate Job running as that ServiceAccount
// (a pre-install and pre-upgrade hook), all deleted once they succeeded,
// in the release's namespace; and a pre-delete and a post-delete Job in
// it.
func admissionChart(name, version string) helmrepo.Chart {
	const policy = `"helm.sh/hook-delete-policy": before-hook-creation,hook-succeeded`
	return helmrepo.Chart{Name: name, Version: version, Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  version: {{ .Chart.Version | quote }}\n",
		"templates/admission-rbac.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .Release.Name }}-admission
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade,post-install,post-upgrade
    ` + policy + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .Release.Name }}-admission
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade,post-install,post-upgrade
    ` + policy + `
rules:
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ .Release.Name }}-admission
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade,post-install,post-upgrade
    ` + policy + `
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: {{ .Release.Name }}-admission}
subjects:
- kind: ServiceAccount
  name: {{ .Release.Name }}-admission
  namespace: {{ .Release.Namespace }}
`,
		"templates/admission-create.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-admission-create
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade
    ` + policy + `
spec:
  template:
    spec:
      serviceAccountName: {{ .Release.Name }}-admission
      restartPolicy: OnFailure
      containers: [{name: create, image: "registry.k8s.io/ingress-nginx/kube-webhook-certgen:v1.4.0", args: [create]}]
`,
		"templates/delete-hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-cleanup
  annotations:
    "helm.sh/hook": pre-delete
    ` + policy + `
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: cleanup, image: "registry.example/cleanup:1.0"}]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-farewell
  annotations:
    "helm.sh/hook": post-delete
    ` + policy + `
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: farewell, image: "registry.example/cleanup:1.0"}]
`,
	}}
}

// jobRuns stands in for the Job controller in ns, which the test API
// server does not run: it completes every Job once the ServiceAccount its
// Pod runs as exists (the Job controller could not create the Pod
// otherwise), and counts the runs of each Job by name.
type jobRuns struct {
	c    client.Client
	mu   sync.Mutex
	runs map[string]map[types.UID]bool
}

func (j *jobRuns) count(name string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.runs[name])
}

func runJobs(t *testing.T, c *testenv.Env, ns string) *jobRuns {
	t.Helper()
	j := &jobRuns{c: c.Client, runs: map[string]map[types.UID]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var jobs batchv1.JobList
			if err := j.c.List(ctx, &jobs, client.InNamespace(ns)); err == nil {
				for i := range jobs.Items {
					j.complete(ctx, &jobs.Items[i])
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return j
}

func (j *jobRuns) complete(ctx context.Context, job *batchv1.Job) {
	if len(job.Status.Conditions) > 0 || !job.DeletionTimestamp.IsZero() {
		return
	}
	if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "" {
		if err := j.c.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: sa}, &corev1.ServiceAccount{}); err != nil {
			return // no Pod without its ServiceAccount: the Job does not run
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	status := fmt.Sprintf(`{"status":{"startTime":%q,"completionTime":%q,"succeeded":1,"conditions":[
		{"type":"SuccessCriteriaMet","status":"True","lastTransitionTime":%[2]q},
		{"type":"Complete","status":"True","lastTransitionTime":%[2]q}]}}`, now, now)
	if err := j.c.Status().Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(status))); err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.runs[job.Name] == nil {
		j.runs[job.Name] = map[types.UID]bool{}
	}
	j.runs[job.Name][job.UID] = true
}

// finishNamespace stands in for the namespace controller, which the
// test API server does not run: once namespace name is being deleted, it
// deletes what the tests put in it and removes the namespace's finalizer.
func finishNamespace(t *testing.T, c *testenv.Env, name string) {
	t.Helper()
	ctx := context.Background()
	eventually(t, 60*time.Second, func() error {
		ns := &corev1.Namespace{}
		err := c.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if ns.DeletionTimestamp.IsZero() {
			return fmt.Errorf("namespace %s is not being deleted", name)
		}
		for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.ServiceAccount{}, &batchv1.Job{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
			if err := c.Client.DeleteAllOf(ctx, obj, client.InNamespace(name)); err != nil {
				return err
			}
		}
		cs, err := kubernetes.NewForConfig(c.Config)
		if err != nil {
			return err
		}
		ns.Spec.Finalizers = nil
		if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return fmt.Errorf("namespace %s finalized; waiting for it to go", name)
	})
}

// edgeCluster starts a second API server and registers it as a
// ManagedCluster named name, its kubeconfig in a Secret of ns.
func edgeCluster(t *testing.T, ns, name string) *testenv.Env {
	t.Helper()
	edge := testenv.Start(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := edge.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	registerCluster(t, ns, name, data)
	return edge
}

// registerCluster registers the cluster kubeconfig reaches as the
// ManagedCluster name, its kubeconfig in a Secret of ns, and deletes the
// ManagedCluster when the test ends.
func registerCluster(t *testing.T, ns, name string, kubeconfig []byte) {
	t.Helper()
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-kubeconfig"}, Data: map[string][]byte{"kubeconfig": kubeconfig}},
		&v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ManagedClusterSpec{
			KubeconfigSecretRef: v1alpha1.KubeconfigSecretReference{Namespace: ns, Name: name + "-kubeconfig", Key: "kubeconfig"}}},
	} {
		if err := env.Client.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// A chart whose pre-install hooks put a ServiceAccount, Role, RoleBinding
// and Job in the release's namespace installs into a target namespace
// that does not exist, as helm install --create-namespace does: Annex
// creates it before the first hook. The upgrade runs the hooks again and
// creates the namespace again when someone deleted it by hand; the
// uninstall runs the pre- and post-delete hooks in it and removes it
// last. On the
// hub (spec.targetNamespace) and on a ManagedCluster (the installation's
// namespace, which the cluster does not have).
func TestHooksInATargetNamespaceThatDoesNotExist(t *testing.T) {
	t.Run("hub", func(t *testing.T) {
		ns, _ := setup(t, admissionChart("admission-hub", "1.0.0"), admissionChart("admission-hub", "1.1.0"))
		target := ns + "-ingress"
		hooksInANewNamespace(t, env, ns, target, "admission-hub", func(i *v1alpha1.ExtensionInstallation) { i.Spec.TargetNamespace = target })
	})
	t.Run("ManagedCluster", func(t *testing.T) {
		ns, _ := setup(t, admissionChart("admission-edge", "1.0.0"), admissionChart("admission-edge", "1.1.0"))
		edge := edgeCluster(t, ns, ns+"-edge")
		hooksInANewNamespace(t, edge, ns, ns, "admission-edge", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Cluster = ns + "-edge" })
	})
}

// hooksInANewNamespace installs extension 1.0.x as "web" in ns on cluster
// c (with target), into namespace target, which does not exist there,
// upgrades it to 1.1.x after deleting the namespace by hand, and
// uninstalls it.
func hooksInANewNamespace(t *testing.T, c *testenv.Env, ns, target, extension string, onTarget func(*v1alpha1.ExtensionInstallation)) {
	ctx := context.Background()
	jobs := runJobs(t, c, target)
	inst := install(t, ns, "web", extension, "1.0.x", onTarget)
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	created := &corev1.Namespace{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: target}, created); err != nil || created.Labels[v1alpha1.LabelInstallationName] != "web" {
		t.Fatalf("namespace %s: labels %v (err=%v); want it created by the installation", target, created.Labels, err)
	}
	if !inventoryHas(got, target) {
		t.Errorf("the created namespace is not in the inventory: %v", got.Status.Inventory)
	}
	if n := jobs.count("web-admission-create"); n != 1 {
		t.Errorf("the pre-install Job ran %d times, want 1", n)
	}
	if steps := stepNames(got.Status.Plans[0]); !strings.HasPrefix(steps, "target namespace,pre-install hooks (weight 0),") {
		t.Errorf("install steps %s: want the target namespace first, then the pre-install hooks", steps)
	}
	// hook-succeeded: gone once every pre-install hook succeeded.
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "web-admission"}, &corev1.ServiceAccount{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ServiceAccount hook is still there (err=%v)", err)
	}

	// Someone deletes the namespace; the upgrade's hooks find it again.
	if err := c.Client.Delete(ctx, created); err != nil {
		t.Fatal(err)
	}
	finishNamespace(t, c, target)
	update(t, ns, "web", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "1.1.x" })
	eventually(t, 60*time.Second, func() error {
		cur, err := getInstallation(t, ns, "web")
		if err != nil {
			return err
		}
		if cur.Status.InstalledVersion != "1.1.0" || !meta.IsStatusConditionTrue(cur.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("installed %q: %s", cur.Status.InstalledVersion, describeConditions(cur))
		}
		return nil
	})
	again := &corev1.Namespace{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: target}, again); err != nil || again.UID == created.UID {
		t.Fatalf("namespace %s not created again by the upgrade (err=%v)", target, err)
	}
	if n := jobs.count("web-admission-create"); n != 2 {
		t.Errorf("the pre-upgrade Job ran %d times in all, want 2", n)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "web-config"}, cm); err != nil || cm.Data["version"] != "1.1.0" {
		t.Errorf("web-config: %v (err=%v), want version 1.1.0", cm.Data, err)
	}

	// The uninstall runs the pre-delete hook in the namespace, removes
	// everything else, runs the post-delete hook in the namespace, and
	// removes the namespace last.
	got, _ = getInstallation(t, ns, "web")
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	finishNamespace(t, c, target)
	waitGone(t, ns, "web")
	if n := jobs.count("web-cleanup"); n != 1 {
		t.Errorf("the pre-delete Job ran %d times, want 1", n)
	}
	if n := jobs.count("web-farewell"); n != 1 {
		t.Errorf("the post-delete Job ran %d times, want 1", n)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: target}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s is still there after the uninstall (err=%v)", target, err)
	}
}

// installedObjects counts the objects of kinds the tests use that carry
// the installation's labels, in every namespace.
func installedObjects(t *testing.T, ns, name string) int {
	t.Helper()
	labels := client.MatchingLabels{v1alpha1.LabelInstallationName: name, v1alpha1.LabelInstallationNamespace: ns}
	n := 0
	for _, list := range []client.ObjectList{&corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &corev1.NamespaceList{}, &batchv1.JobList{}} {
		if err := env.Client.List(context.Background(), list, labels); err != nil {
			t.Fatal(err)
		}
		n += meta.LenList(list)
	}
	return n
}

const oldPDB = `apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata:
  name: {{ .Release.Name }}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: redis}}
`

// A chart made for Kubernetes before 1.25 carries a policy/v1beta1
// PodDisruptionBudget: the change is refused before anything is applied,
// not even the target namespace, the pre-install hook or the record,
// with a terminal condition naming the object, its apiVersion, what the
// cluster serves and the release that removed it.
func TestChartWithARemovedAPIIsRefusedBeforeAnything(t *testing.T) {
	ns, _ := setup(t, helmrepo.Chart{Name: "oldredis", Version: "1.0.0", Files: map[string]string{
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\n",
		"templates/sa.yaml":   "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}\n",
		"templates/hook.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-hook\n  annotations: {\"helm.sh/hook\": pre-install}\n",
		"templates/pdb.yaml":  strings.ReplaceAll(oldPDB, "{{ .Release.Name }}", "{{ .Release.Name }}-pdb"),
	}})
	target := ns + "-redis"
	inst := install(t, ns, "redis", "oldredis", "", func(i *v1alpha1.ExtensionInstallation) { i.Spec.TargetNamespace = target })
	got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonKindNotServed)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	for _, want := range []string{
		"PodDisruptionBudget " + target + "/redis-pdb: apiVersion policy/v1beta1 is not served",
		"the cluster serves PodDisruptionBudget in policy/v1",
		"Kubernetes 1.25 removed policy/v1beta1 PodDisruptionBudget: use policy/v1",
		"nothing was applied",
	} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready message lacks %q: %s", want, ready.Message)
		}
	}
	if n := installedObjects(t, ns, "redis"); n != 0 {
		t.Errorf("%d objects of the installation exist; want none", n)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: target}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the target namespace was created (err=%v); nothing may be applied", err)
	}
	var records corev1.SecretList
	if err := env.Client.List(context.Background(), &records, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelInstallationName: "redis"}); err != nil {
		t.Fatal(err)
	}
	if len(records.Items) != 0 || len(got.Status.History) != 0 || got.Status.Pending != nil {
		t.Errorf("a revision was started: %d records, history %v, pending %v", len(records.Items), got.Status.History, got.Status.Pending)
	}
}

// A package of before Kubernetes 1.25 (as KUDO's redis and zookeeper)
// whose deploy plan applies a ConfigMap, then a policy/v1beta1
// PodDisruptionBudget: refused before its first step, nothing applied.
func TestPackageWithARemovedAPIIsRefusedBeforeAnything(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	writePackage(t, dir, "oldzk-0.1.0", map[string]string{
		"operator.yaml": `apiVersion: kudo.dev/v1beta1
name: oldzk
operatorVersion: 0.1.0
appVersion: "3.4"
kubernetesVersion: 1.15.0
tasks:
  - name: config
    kind: Apply
    spec: {resources: [config.yaml]}
  - name: pdb
    kind: Apply
    spec: {resources: [pdb.yaml]}
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - {name: config, tasks: [config]}
          - {name: pdb, tasks: [pdb]}
`,
		"params.yaml":           "apiVersion: kudo.dev/v1beta1\nparameters: []\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}-config\n",
		"templates/pdb.yaml":    strings.ReplaceAll(oldPDB, "{{ .Release.Name }}", "{{ .Name }}-pdb"),
	})
	setupDirectoryCatalog(t, ns, dir)
	inst := install(t, ns, "zk", "oldzk", "")
	eventually(t, 60*time.Second, func() error {
		_, err := getInstallation(t, ns, "zk")
		return err
	})
	got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonKindNotServed)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	for _, want := range []string{
		"PodDisruptionBudget " + ns + "/zk-pdb: apiVersion policy/v1beta1 is not served (the cluster serves PodDisruptionBudget in policy/v1)",
		"Kubernetes 1.25 removed policy/v1beta1 PodDisruptionBudget: use policy/v1",
	} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready message lacks %q: %s", want, ready.Message)
		}
	}
	if n := installedObjects(t, ns, "zk"); n != 0 {
		t.Errorf("%d objects of the installation exist; want none (the first step must not run)", n)
	}
	for _, p := range got.Status.Plans {
		if p.Name == "deploy" && p.State != v1alpha1.PlanNeverRun {
			t.Errorf("plan deploy is %s; want it never run", p.State)
		}
	}
}

// The API server puts the uninstall finalizer on every installation it
// creates (policy annex-uninstall-finalizer), so the manager makes no
// write for it. An installation deleted before anything of it was
// applied needs nothing from its cluster: one naming a ManagedCluster
// that does not exist is gone at once.
func TestFinalizerFromCreationAndNeverAppliedDeletion(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("never-applied", "1.0.0", nil))
	inst := install(t, ns, "app", "never-applied", "", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Cluster = ns + "-missing" })
	if !slices.Contains(inst.Finalizers, v1alpha1.FinalizerUninstall) {
		t.Fatalf("created with finalizers %v, want %s from the API server", inst.Finalizers, v1alpha1.FinalizerUninstall)
	}
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionFalse, "")
	if err := env.Client.Delete(ctx, inst); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, inst.Name)
}
