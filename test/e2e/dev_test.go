// Package e2e runs the annex binary the way a user does.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/exampleoperator"
	"github.com/annex-platform/annex/internal/scheme"
	"github.com/annex-platform/annex/internal/testenv"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// TestDev builds annex, runs `annex dev` with smaller nodes than its
// default, checks that the built-in catalog's Extensions are there as soon
// as it says it is running, installs the sample from config/samples with
// the kubeconfig it writes (its greeter runs 2 replicas on the fake
// nodes), installs charts whose Pods select Linux nodes (Ready) or a node
// that does not exist (the condition names the Pod and the scheduler's
// reason), installs and uninstalls into a namespace Annex creates, and
// stops it with SIGTERM: nothing it started may outlive it.
func TestDev(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dev, _, exited, stateDir := startDev(t, 90*time.Second, "--node-cpu", "8", "--node-memory", "32Gi")
	c := clientFromKubeconfig(t, filepath.Join(stateDir, "kubeconfig"))
	ctx := context.Background()

	// "Annex is running" came after the built-in catalog synced: its
	// Extensions are listed at once, without waiting.
	cat := &v1alpha1.Catalog{}
	if err := c.Get(ctx, client.ObjectKey{Name: "builtin"}, cat); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(cat.Status.Conditions, v1alpha1.ConditionReady) || cat.Status.ExtensionCount < 2 {
		t.Errorf("when annex dev said it was running, Catalog builtin was %+v", cat.Status)
	}
	var builtinExtensions v1alpha1.ExtensionList
	if err := c.List(ctx, &builtinExtensions, client.MatchingLabels{v1alpha1.LabelCatalog: "builtin"}); err != nil {
		t.Fatal(err)
	}
	if n := len(builtinExtensions.Items); n < 2 || n != int(cat.Status.ExtensionCount) {
		t.Errorf("when annex dev said it was running, the built-in catalog had %d Extensions, its status says %d", n, cat.Status.ExtensionCount)
	}

	// The flags size the fake nodes.
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if cpu, mem := n.Status.Allocatable.Cpu(), n.Status.Allocatable.Memory(); cpu.String() != "8" || mem.String() != "32Gi" {
			t.Errorf("node %s offers cpu %s and memory %s, want 8 and 32Gi (--node-cpu, --node-memory)", n.Name, cpu, mem)
		}
	}

	// The README's sample installs and becomes Ready, with its objects.
	for _, obj := range readManifests(t, filepath.Join(root, "config/samples/hello.yaml")) {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"greetings-crd", "hello"} {
		waitFor(t, 90*time.Second, exited, func() error {
			inst := &v1alpha1.ExtensionInstallation{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, inst); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(inst.Status.Conditions, v1alpha1.ConditionReady) {
				return fmt.Errorf("%s not Ready: %+v", name, inst.Status.Conditions)
			}
			return nil
		})
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the sample's ConfigMap: %v", err)
	}
	// The demo runs real replicas on the fake nodes.
	deploy := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "hello"}, deploy); err != nil {
		t.Fatal(err)
	}
	if deploy.Status.AvailableReplicas != 2 {
		t.Fatalf("the greeter has %d available replicas, want 2", deploy.Status.AvailableReplicas)
	}

	expectPodsScheduleLikeOnRealNodes(t, c, exited)

	// An installation into a namespace Annex creates uninstalls to the
	// end: the namespace is finalized instead of staying Terminating.
	greeter := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "greeter"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "hello", Version: "0.1.x", TargetNamespace: "greeter-demo"},
	}
	if err := c.Create(ctx, greeter); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, exited, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(greeter), greeter); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(greeter.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("greeter not Ready: %+v", greeter.Status.Conditions)
		}
		return nil
	})
	if err := c.Delete(ctx, greeter); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, exited, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(greeter), greeter); !apierrors.IsNotFound(err) {
			return fmt.Errorf("installation greeter still there (err=%v)", err)
		}
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: "greeter-demo"}, ns); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace greeter-demo still there (%s, err=%v)", ns.Status.Phase, err)
		}
		return nil
	})

	// SIGTERM stops annex dev and everything it started.
	children := childPIDs(dev.Process.Pid)
	if len(children) < 5 {
		t.Fatalf("expected etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok as children of annex dev, found %v", children)
	}
	if err := dev.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("annex dev exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("annex dev did not stop within 60s of SIGTERM")
	}
	for _, pid := range children {
		if alive(pid) {
			t.Errorf("child process %d outlived annex dev", pid)
		}
	}
}

// linuxChartFiles is a chart as many are by default: a Deployment and a
// post-install hook Job whose Pods select Linux nodes.
var linuxChartFiles = map[string]string{
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: linux-app}
spec:
  replicas: 2
  selector: {matchLabels: {app: linux-app}}
  template:
    metadata: {labels: {app: linux-app}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: app, image: "registry.example/app:1.0", resources: {requests: {cpu: "1", memory: 1Gi}}}]
`,
	"templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: linux-app-setup
  annotations: {helm.sh/hook: post-install, helm.sh/hook-delete-policy: before-hook-creation}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: setup, image: "registry.example/setup:1.0"}]
`,
}

// stuckChartFiles is a chart whose Pod selects a node that no cluster of
// annex dev has.
var stuckChartFiles = map[string]string{
	"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck}
spec:
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      nodeSelector: {disktype: none-such}
      containers: [{name: app, image: "registry.example/app:1.0"}]
`,
}

// expectPodsScheduleLikeOnRealNodes installs, from a Helm repository, a
// chart whose Deployment and hook Job select Linux nodes: it becomes
// Ready. A chart whose Pod selects a node that does not exist is not
// Ready, and its Ready condition names the Pod and the scheduler's reason.
func expectPodsScheduleLikeOnRealNodes(t *testing.T, c client.Client, exited <-chan error) {
	t.Helper()
	ctx := context.Background()
	repo := helmrepo.NewServer(t,
		helmrepo.Chart{Name: "linux-app", Version: "1.0.0", Files: linuxChartFiles},
		helmrepo.Chart{Name: "stuck", Version: "1.0.0", Files: stuckChartFiles})
	objs := []client.Object{
		&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "scheduling"},
			Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}}}},
		&v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "linux-app"},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "linux-app", TargetNamespace: "linux-app"}},
		&v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "stuck"},
			Spec: v1alpha1.ExtensionInstallationSpec{Extension: "stuck", TargetNamespace: "stuck"}},
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	ready := func(name string) (*metav1.Condition, error) {
		inst := &v1alpha1.ExtensionInstallation{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, inst); err != nil {
			return nil, err
		}
		cond := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
		if cond == nil {
			return nil, fmt.Errorf("%s has no Ready condition yet: %+v", name, inst.Status.Conditions)
		}
		return cond, nil
	}
	waitFor(t, 2*time.Minute, exited, func() error {
		cond, err := ready("linux-app")
		if err != nil {
			return err
		}
		if cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("linux-app not Ready: %s: %s", cond.Reason, cond.Message)
		}
		return nil
	})
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "linux-app", Name: "linux-app-setup"}, job); err != nil {
		t.Fatalf("the hook Job: %v", err)
	}
	if job.Status.Succeeded != 1 {
		t.Errorf("the hook Job has %d succeeded Pods, want 1", job.Status.Succeeded)
	}
	const reason = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
	waitFor(t, 2*time.Minute, exited, func() error {
		cond, err := ready("stuck")
		if err != nil {
			return err
		}
		if cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "Pod stuck/stuck-") ||
			!strings.Contains(cond.Message, ": cannot be scheduled (Unschedulable): "+reason) {
			return fmt.Errorf("stuck's Ready condition does not name its Pod and the scheduler's reason: %s: %s", cond.Reason, cond.Message)
		}
		return nil
	})
	// Installations first, their catalog last.
	for i := len(objs) - 1; i >= 0; i-- {
		if err := c.Delete(ctx, objs[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// startDev builds annex and example-operator (which `annex dev` runs for
// the example operator's Pods) and runs `annex dev` with a state folder of
// its own, plus args, until it says it is running (within timeout). The
// process is killed when the test ends; its output is logged if the test
// failed.
func startDev(t *testing.T, timeout time.Duration, args ...string) (dev *exec.Cmd, out *syncBuffer, exited chan error, stateDir string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := testenv.RequireWorkloadsBinDir(t)
	work := t.TempDir()
	annex := filepath.Join(work, "annex")
	build := exec.Command("go", "build", "-o", work, "./cmd/annex", "./cmd/example-operator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stateDir = filepath.Join(work, "dev")
	out = &syncBuffer{}
	dev = exec.Command(annex, append([]string{"dev", "--dir", stateDir, "--bin-dir", binDir}, args...)...)
	dev.Stdout, dev.Stderr = out, out
	if err := dev.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	go func() { exited <- dev.Wait() }()
	t.Cleanup(func() {
		_ = dev.Process.Kill()
		if t.Failed() {
			t.Logf("annex dev output:\n%s", out.String())
		}
	})
	waitFor(t, timeout, exited, func() error {
		if !strings.Contains(out.String(), "Annex is running") {
			return errors.New("annex dev has not said it is running")
		}
		return nil
	})
	return dev, out, exited, stateDir
}

// waitFor polls f until it returns nil; it fails at the deadline or when
// the process under test exits early.
func waitFor(t *testing.T, timeout time.Duration, exited <-chan error, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case exitErr := <-exited:
			t.Fatalf("annex dev exited early (%v) while waiting: %v", exitErr, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// clientFromKubeconfig returns a client of Annex's kinds, the client-go
// ones and the example operator's Banner.
func clientFromKubeconfig(t *testing.T, path string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	s := scheme.New()
	if err := exampleoperator.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return objs
}

// decodeManifests reads a YAML stream (or JSON) into its objects, skipping
// empty documents.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// childPIDs lists the direct children of pid from /proc.
func childPIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(p); ok && ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

func parentOf(pid int) (int, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "PPid:"); ok {
			ppid, err := strconv.Atoi(strings.TrimSpace(v))
			return ppid, err == nil
		}
	}
	return 0, false
}

// alive reports whether pid runs (a zombie waiting to be reaped does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// syncBuffer is a bytes.Buffer safe for the two writers of a subprocess.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
