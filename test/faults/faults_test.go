// Package faults kills the Annex manager while installations are created,
// upgraded, downgraded and deleted — at random moments, at random
// failpoints, and (TestKillPoints) at each chosen point of the apply
// sequence — restarts it, and checks that everything converges with
// nothing orphaned, duplicated or waiting for a human. It does the same to
// a profile's rollout over a fleet (TestRolloutCrashesConverge,
// TestRolloutKillPoints): a rollout resumes at its step, and a halt and
// its rollback survive the crash.
//
// `make test` runs a fixed seed and every kill point once; `make
// test-faults` runs both many times with random seeds and more operations,
// several copies at once so that they compete for the CPU
// (hack/test-faults.sh; ANNEX_FAULTS=random, ANNEX_FAULT_OPS=n,
// ANNEX_FAULT_ROLLOUT_OPS=n, ANNEX_FAULT_SEED=n to replay a seed,
// ANNEX_FAULT_REPEAT=n).
package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

const namespace = "faults"

// app renders four objects; 2.0.0 drops the Secret and adds a ConfigMap,
// so upgrades and downgrades prune and restore; 3.0.0 never applies; 4.0.0
// brings a CRD too large for a record to hold inline. Each slot installs its own
// extension: one version of an extension serves a whole cluster.
func app(name, version string) helmrepo.Chart {
	files := map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata: {version: {{ .Chart.Version | quote }}}\n",
		"templates/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}\n",
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 0
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec: {containers: [{name: app, image: "registry.k8s.io/pause:3.10"}]}
`,
	}
	switch version {
	case "4.0.0":
		// A CRD too large for the record itself: the record keeps the set
		// in a piece.
		files["crds/big.yaml"] = bigCRD(name)
	case "3.0.0":
		// The API server refuses the upper-case name: every attempt fails,
		// after the other objects are applied, and the upgrade rolls back.
		files["templates/bad.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-BAD\n"
		fallthrough
	case "2.0.0":
		files["templates/extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra\ndata: {a: b}\n"
	default:
		files["templates/secret.yaml"] = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-secret\nstringData: {token: t}\n"
	}
	return helmrepo.Chart{Name: name, Version: version, Files: files}
}

// ranges and the version each resolves to.
var ranges = map[string]string{"1.0.x": "1.0.0", "1.1.x": "1.1.0", "2.x": "2.0.0", "3.x": "3.0.0", "4.x": "4.0.0"}

// appVersions are the versions of app every catalog of these tests offers.
var appVersions = []string{"1.0.0", "1.1.0", "2.0.0", "3.0.0", "4.0.0"}

// bigCRD is a CRD of about 300 KB for the extension name.
func bigCRD(name string) string {
	var words strings.Builder
	rng := rand.New(rand.NewPCG(uint64(len(name)), 4))
	for words.Len() < 300<<10 {
		fmt.Fprintf(&words, "%x ", rng.Uint32())
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.%[1]s.annex.dev
spec:
  group: %[1]s.annex.dev
  names: {kind: Thing, plural: things, singular: thing, listKind: ThingList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, description: %[2]q}
`, name, words.String())
}

func TestManagerCrashesConverge(t *testing.T) {
	seed, ops := uint64(20261121), 100
	if os.Getenv("ANNEX_FAULTS") == "random" {
		seed = rand.Uint64()
		ops = 300
	}
	if n, err := strconv.ParseUint(os.Getenv("ANNEX_FAULT_SEED"), 10, 64); err == nil {
		seed = n
	}
	if n, err := strconv.Atoi(os.Getenv("ANNEX_FAULT_OPS")); err == nil {
		ops = n
	}
	t.Logf("seed %d, %d operations (reproduce: the seed is fixed in make test)", seed, ops)
	rng := rand.New(rand.NewPCG(seed, 0))

	env := testenv.Start(t)
	ctx := context.Background()
	c := env.Client
	work := t.TempDir()
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	mgr := newManagerProcess(t, work, kubeconfig)

	slots := 20
	var charts []helmrepo.Chart
	for i := 0; i < slots; i++ {
		for _, v := range appVersions {
			charts = append(charts, app(fmt.Sprintf("app-%02d", i), v))
		}
	}
	repo := helmrepo.NewServer(t, charts...)
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	must(t, c.Create(ctx, &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "faults"},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}},
	}))
	mgr.start()

	// want is the desired state: slot → range; absent means deleted.
	want := map[string]string{}
	kills, pointKills := 0, 0
	for i := 0; i < ops; i++ {
		name := fmt.Sprintf("app-%02d", rng.IntN(slots))
		cur := &v1alpha1.ExtensionInstallation{}
		err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cur)
		switch {
		case apierrors.IsNotFound(err):
			rangeText := pick(rng)
			inst := &v1alpha1.ExtensionInstallation{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
				Spec: v1alpha1.ExtensionInstallationSpec{
					Extension: name, Version: rangeText,
					Upgrade: v1alpha1.UpgradePolicy{AllowDowngrade: true},
				},
			}
			must(t, c.Create(ctx, inst))
			want[name] = rangeText
		case err != nil:
			t.Fatal(err)
		case !cur.DeletionTimestamp.IsZero():
			// Being uninstalled; leave it.
		case rng.IntN(10) < 7:
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Spec.Version = pick(rng)
			must(t, c.Patch(ctx, cur, patch))
			want[name] = cur.Spec.Version
		default:
			must(t, c.Delete(ctx, cur))
			delete(want, name)
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		switch {
		case mgr.exited != nil && isClosed(mgr.exited):
			// It killed itself at its armed point.
			mgr.cmd = nil
			pointKills++
			mgr.start(armRandomly(rng)...)
		case rng.IntN(10) == 0:
			mgr.kill()
			kills++
			time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
			mgr.start(armRandomly(rng)...)
		}
	}
	t.Logf("%d operations, the manager was SIGKILLed %d times at random and killed itself %d times at a failpoint", ops, kills, pointKills)
	mgr.kill()
	mgr.start()

	// Everything converges without help.
	requireConverged(t, ctx, c, namespace, want, 4*time.Minute)
	mgr.stop()
}

// requireConverged waits until the cluster matches want, then fails the
// test if any object is orphaned or duplicated.
func requireConverged(t *testing.T, ctx context.Context, c client.Client, ns string, want map[string]string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		problems := divergence(ctx, c, ns, want)
		if len(problems) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not converged after %s:\n%s", timeout, strings.Join(problems, "\n"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if problems := orphans(ctx, c, ns); len(problems) > 0 {
		t.Fatalf("orphaned or duplicated objects:\n%s", strings.Join(problems, "\n"))
	}
}

// killPoints are the failpoints the random test arms.
var killPoints = []string{
	failpoint.AfterIntent, failpoint.AfterFirstObject, failpoint.AfterObjects, failpoint.DuringPrune,
	failpoint.AfterEvent, failpoint.BeforeStatus, failpoint.UninstallAfterFirstDelete,
}

// armRandomly returns, half of the time, the environment that arms a random
// kill point for one of its first three hits on any installation.
func armRandomly(rng *rand.Rand) []string {
	if rng.IntN(2) == 0 {
		return nil
	}
	return []string{failpoint.Env(killPoints[rng.IntN(len(killPoints))], "", "", 1+rng.IntN(3))}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// repeatFromEnv is ANNEX_FAULT_REPEAT, how often TestKillPoints runs its
// scenarios (default 1).
func repeatFromEnv() int {
	if n, err := strconv.Atoi(os.Getenv("ANNEX_FAULT_REPEAT")); err == nil && n > 0 {
		return n
	}
	return 1
}

func pick(rng *rand.Rand) string {
	keys := []string{"1.0.x", "1.1.x", "2.x"}
	return keys[rng.IntN(len(keys))]
}

// divergence lists how the cluster differs from want; empty when converged.
func divergence(ctx context.Context, c client.Client, ns string, want map[string]string) []string {
	var list v1alpha1.ExtensionInstallationList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	seen := map[string]bool{}
	for _, inst := range list.Items {
		seen[inst.Name] = true
		rangeText, ok := want[inst.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s should be gone", inst.Name))
			continue
		}
		ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
		if stalled := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionStalled); stalled != nil && stalled.Status == metav1.ConditionTrue {
			problems = append(problems, fmt.Sprintf("%s is Stalled: %s", inst.Name, stalled.Message))
			continue
		}
		if ready == nil || ready.Status != metav1.ConditionTrue || inst.Status.ObservedGeneration != inst.Generation ||
			inst.Status.InstalledVersion != ranges[rangeText] {
			problems = append(problems, fmt.Sprintf("%s: want %s Ready, have %q ready=%v gen %d/%d", inst.Name,
				ranges[rangeText], inst.Status.InstalledVersion, ready, inst.Status.ObservedGeneration, inst.Generation))
		}
	}
	for name := range want {
		if !seen[name] {
			problems = append(problems, fmt.Sprintf("%s is missing", name))
		}
	}
	sort.Strings(problems)
	return problems
}

// orphans lists every object labelled by Annex that no live inventory
// holds, every inventory entry that does not exist, and every object two
// inventories claim.
func orphans(ctx context.Context, c client.Client, ns string) []string {
	return orphansAcross(ctx, c, c, ns)
}

// orphansAcross is orphans for the installations in namespace ns of the
// hub and the objects they install in namespace ns of cluster.
func orphansAcross(ctx context.Context, hub, cluster client.Client, ns string) []string {
	var list v1alpha1.ExtensionInstallationList
	if err := hub.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return []string{err.Error()}
	}
	owner := map[string]string{}
	var problems []string
	for _, inst := range list.Items {
		for _, ref := range inst.Status.Inventory {
			if ref.Namespace != ns {
				continue // the check lists the namespace's objects only
			}
			key := ref.Kind + "/" + ref.Name
			if other, dup := owner[key]; dup {
				problems = append(problems, fmt.Sprintf("%s is in the inventories of %s and %s", key, other, inst.Name))
			}
			owner[key] = inst.Name
		}
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMapList"}, {Version: "v1", Kind: "SecretList"},
		{Version: "v1", Kind: "ServiceAccountList"}, {Group: "apps", Version: "v1", Kind: "DeploymentList"},
	} {
		objs := &unstructured.UnstructuredList{}
		objs.SetGroupVersionKind(gvk)
		if err := cluster.List(ctx, objs, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}); err != nil {
			return append(problems, err.Error())
		}
		for _, o := range objs.Items {
			key := o.GetKind() + "/" + o.GetName()
			inst, ok := owner[key]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s is labelled by Annex (installation %q) but in no inventory", key, o.GetLabels()[v1alpha1.LabelInstallationName]))
			case o.GetLabels()[v1alpha1.LabelInstallationName] != inst:
				problems = append(problems, fmt.Sprintf("%s is labelled for %q but in the inventory of %s", key, o.GetLabels()[v1alpha1.LabelInstallationName], inst))
			}
			delete(owner, key)
		}
	}
	for key, inst := range owner {
		problems = append(problems, fmt.Sprintf("%s is in the inventory of %s but does not exist", key, inst))
	}
	sort.Strings(problems)
	return problems
}

// managerProcess runs `annex manager` against the test API server.
type managerProcess struct {
	t          *testing.T
	binary     string
	kubeconfig string
	cmd        *exec.Cmd
	exited     chan struct{} // closed when cmd has exited
	log        *os.File
	args       []string // more arguments of `annex manager` (sibling)
	cacheDir   string   // default: next to the kubeconfig
}

func newManagerProcess(t *testing.T, work, kubeconfig string) *managerProcess {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// hack/test-faults.sh builds the binary once for all its runs.
	binary := os.Getenv("ANNEX_BINARY")
	if binary == "" {
		binary = filepath.Join(work, "annex")
		build := exec.Command("go", "build", "-o", binary, "./cmd/annex")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	log, err := os.Create(filepath.Join(work, "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	m := &managerProcess{t: t, binary: binary, kubeconfig: kubeconfig, log: log}
	t.Cleanup(func() {
		m.kill()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			if len(data) > 20000 {
				data = data[len(data)-20000:]
			}
			t.Logf("manager log (tail):\n%s", data)
		}
	})
	return m
}

// sibling is another manager process of the same binary against the same
// API server, with its own log (<name>.log), cache and arguments added to
// m's, such as a manager of another shard.
func (m *managerProcess) sibling(name string, args ...string) *managerProcess {
	work := filepath.Dir(m.log.Name())
	log, err := os.Create(filepath.Join(work, name+".log"))
	if err != nil {
		m.t.Fatal(err)
	}
	o := &managerProcess{t: m.t, binary: m.binary, kubeconfig: m.kubeconfig, log: log,
		args: append(slices.Clone(m.args), args...), cacheDir: filepath.Join(work, name+"-cache")}
	m.t.Cleanup(func() {
		o.kill()
		if m.t.Failed() {
			data, _ := os.ReadFile(log.Name())
			if len(data) > 20000 {
				data = data[len(data)-20000:]
			}
			m.t.Logf("%s log (tail):\n%s", name, data)
		}
	})
	return o
}

// start starts the manager with env added to the test's environment (a
// failpoint.Env setting arms a kill point).
func (m *managerProcess) start(env ...string) {
	cacheDir := m.cacheDir
	if cacheDir == "" {
		cacheDir = filepath.Join(filepath.Dir(m.kubeconfig), "cache")
	}
	m.cmd = exec.Command(m.binary, append([]string{"manager", "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--cache-dir", cacheDir}, m.args...)...)
	m.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+m.kubeconfig), env...)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	exited, cmd := make(chan struct{}), m.cmd
	m.exited = exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
}

// awaitDeath waits until the manager has killed itself at its armed
// failpoint, and reports false if it still runs after timeout.
func (m *managerProcess) awaitDeath(timeout time.Duration) bool {
	select {
	case <-m.exited:
		m.cmd = nil
		return true
	case <-time.After(timeout):
		return false
	}
}

// kill ends the manager with SIGKILL: no cleanup of any kind runs.
func (m *managerProcess) kill() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
	m.cmd = nil
}

func (m *managerProcess) stop() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(30 * time.Second):
		m.t.Error("the manager did not stop within 30s of SIGTERM; killed")
		m.kill()
	}
	m.cmd = nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
