package apply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/annex-platform/annex/internal/localcluster"
	"github.com/annex-platform/annex/internal/testenv"
)

// nodeSelectorDeploymentDoc is a Deployment of one replica whose Pods
// select nodes labelled key=value.
func nodeSelectorDeploymentDoc(name, key, value string) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      nodeSelector: {%[2]q: %[3]q}
      containers: [{name: app, image: "registry.example/app:1.0", resources: {requests: {cpu: "1", memory: 1Gi}}}]`, name, key, value)
}

// nodeSelectorHookJobDoc is a post-install hook Job whose Pod selects
// nodes labelled key=value.
func nodeSelectorHookJobDoc(name, key, value string) string {
	return fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: %s, annotations: {helm.sh/hook: post-install}}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      nodeSelector: {%q: %q}
      containers: [{name: run, image: "registry.example/setup:1.0"}]`, name, key, value)
}

// TestPodsOnLocalCluster runs workloads through the applier on a local
// cluster with kube-scheduler and kwok's nodes, as annex dev runs them:
//
//   - a Deployment and a post-install hook Job whose Pods select
//     kubernetes.io/os=linux, as many charts' do by default, become
//     Available and Complete;
//   - a Deployment whose nodeSelector no node matches is not ready, and
//     its health names its Pod and the scheduler's reason;
//   - a hook Job alike times out naming its Pod and that reason;
//   - an object that a webhook must admit, with nothing serving the
//     webhook, is refused with the explanation that the nodes run no
//     containers.
func TestPodsOnLocalCluster(t *testing.T) {
	binDir := testenv.RequireWorkloadsBinDir(t)
	ctx := context.Background()
	c, err := localcluster.Start(ctx, localcluster.Options{Dir: t.TempDir(), BinDir: binDir, Workloads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the local cluster: %v", err)
		}
	})
	a, err := New(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "pods"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}

	t.Run("Linux nodes", func(t *testing.T) {
		set := Set{Objects: objects(t,
			nodeSelectorDeploymentDoc("linux", "kubernetes.io/os", "linux"),
			nodeSelectorHookJobDoc("linux-setup", "kubernetes.io/os", "linux"))}
		res, err := a.ApplyWithHooks(ctx, owner, ns, set, HookOptions{HookTimeout: time.Minute})
		if err != nil {
			t.Fatalf("ApplyWithHooks: %v", err)
		}
		testenv.Eventually(t, time.Minute, func() error {
			h, err := a.Health(ctx, res.Inventory)
			if err != nil {
				return err
			}
			if !h.Ready {
				return errors.New(h.Summary())
			}
			return nil
		})
	})

	const schedulerReason = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
	t.Run("no node matches", func(t *testing.T) {
		res, err := a.ApplyWithOptions(ctx, owner, ns, Set{Objects: objects(t, nodeSelectorDeploymentDoc("nowhere", "disktype", "none-such"))}, ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var summary string
		testenv.Eventually(t, time.Minute, func() error {
			h, err := a.Health(ctx, res.Inventory)
			if err != nil {
				return err
			}
			summary = h.Summary()
			if !strings.Contains(summary, "; Pod pods/nowhere-") || !strings.Contains(summary, ": cannot be scheduled (Unschedulable): "+schedulerReason) {
				return fmt.Errorf("Summary %q does not name the Pod and the scheduler's reason", summary)
			}
			// The same cluster state reads the same: once the deployment
			// controller has stopped moving the Deployment's conditions
			// (Replicas, then Available), a second read says the same.
			again, err := a.Health(ctx, res.Inventory)
			if err != nil {
				return err
			}
			if again.Summary() != summary {
				return fmt.Errorf("second Summary %q, first %q", again.Summary(), summary)
			}
			return nil
		})
	})

	t.Run("hook Job no node matches", func(t *testing.T) {
		set := Set{Objects: objects(t, nodeSelectorHookJobDoc("nowhere-setup", "disktype", "none-such"))}
		_, err := a.ApplyWithHooks(ctx, owner, ns, set, HookOptions{HookTimeout: 10 * time.Second})
		var hookErr *HookError
		if !errors.As(err, &hookErr) || !hookErr.TimedOut {
			t.Fatalf("ApplyWithHooks error = %v, want a timed-out *HookError", err)
		}
		for _, part := range []string{"post-install hook Job pods/nowhere-setup did not complete within 10s: Pod pods/nowhere-setup-",
			": cannot be scheduled (Unschedulable): " + schedulerReason} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error %q does not say %q", err, part)
			}
		}
	})

	// Deleting an operator's objects, its ServiceAccount goes only once the
	// Pods of its Deployment are gone: a stopping operator keeps its RBAC.
	t.Run("RBAC after the Pods", func(t *testing.T) {
		const opNS = "rbac-after-pods"
		createNamespace(t, a, opNS)
		set := Set{Objects: objects(t,
			`{apiVersion: v1, kind: ServiceAccount, metadata: {name: op}}`,
			`
apiVersion: apps/v1
kind: Deployment
metadata: {name: op}
spec:
  replicas: 2
  selector: {matchLabels: {app: op}}
  template:
    metadata: {labels: {app: op}}
    spec:
      serviceAccountName: op
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: op, image: "registry.example/op:1.0"}]`)}
		res, err := a.ApplyWithOptions(ctx, owner, opNS, set, ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, func() error {
			h, err := a.Health(ctx, res.Inventory)
			if err != nil {
				return err
			}
			if !h.Ready {
				return errors.New(h.Summary())
			}
			return nil
		})
		cs, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		pods, err := cs.CoreV1().Pods(opNS).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer pods.Stop()
		accounts, err := cs.CoreV1().ServiceAccounts(opNS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=op"})
		if err != nil {
			t.Fatal(err)
		}
		defer accounts.Stop()
		deleteUntilGone(t, a, owner, res.Inventory, false)
		// Each deletion's resourceVersion is a revision of the one etcd.
		deletedAt := func(w watch.Interface, wantAll int) []uint64 {
			var rvs []uint64
			timeout := time.After(30 * time.Second)
			for len(rvs) < wantAll {
				select {
				case ev := <-w.ResultChan():
					if ev.Type == watch.Deleted {
						rv, _ := strconv.ParseUint(ev.Object.(metav1.Object).GetResourceVersion(), 10, 64)
						rvs = append(rvs, rv)
					}
				case <-timeout:
					t.Fatalf("saw %d deletions, want %d", len(rvs), wantAll)
				}
			}
			return rvs
		}
		podsGone := deletedAt(pods, 2)
		saGone := deletedAt(accounts, 1)[0]
		for _, rv := range podsGone {
			if rv > saGone {
				t.Errorf("the ServiceAccount was deleted (revision %d) before a Pod of its Deployment (revision %d)", saGone, rv)
			}
		}
	})

	t.Run("webhook served by nothing", func(t *testing.T) {
		webhook := mustObject(t, fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: checks-configmaps}
webhooks:
- name: check.example.com
  clientConfig: {service: {namespace: %[1]s, name: checker, port: 443}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[1]s}}
  objectSelector: {matchLabels: {checked: "yes"}}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 2`, ns))
		if err := a.Client.Create(ctx, webhook); err != nil {
			t.Fatal(err)
		}
		var err error
		attempt := 0
		// The API server may take a moment to load the new webhook; each
		// attempt writes a ConfigMap of its own, as one admitted would
		// not be written again.
		testenv.Eventually(t, 30*time.Second, func() error {
			attempt++
			cm := fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: checked-%d, labels: {checked: "yes"}}, data: {a: b}}`, attempt)
			_, err = a.ApplyWithOptions(ctx, owner, ns, Set{Objects: objects(t, cm)}, ApplyOptions{})
			if err == nil {
				return errors.New("the ConfigMap was admitted: the webhook is not loaded yet")
			}
			return nil
		})
		for _, part := range []string{"apply ConfigMap pods/checked-", `failed calling webhook "check.example.com"`, noContainersHint} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error %q does not say %q", err, part)
			}
		}
	})
}
