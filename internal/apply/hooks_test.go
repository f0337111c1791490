package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// hookJobDoc is a Job hook for events; policy, when set, is its
// helm.sh/hook-delete-policy.
func hookJobDoc(name, events, policy string) string {
	ann := fmt.Sprintf("helm.sh/hook: %q", events)
	if policy != "" {
		ann += fmt.Sprintf(", helm.sh/hook-delete-policy: %q", policy)
	}
	return fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: %s, annotations: {%s}}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: run, image: "registry.example/migrate:1.0"}]`, name, ann)
}

// finishJob stands in for the Job controller, which the test API server
// does not run: it waits until the Job ns/name exists with a UID other than
// notUID, then marks it Complete, or Failed when fail.
func finishJob(ctx context.Context, t *testing.T, a *Applier, ns, name string, notUID types.UID, fail bool) {
	t.Helper()
	r := ref("batch", "v1", "Job", ns, name)
	var job *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		job, err = a.get(ctx, r)
		return job != nil && job.GetUID() != notUID, err
	})
	if err != nil {
		t.Errorf("Job %s/%s was never created: %v", ns, name, err)
		return
	}
	now := time.Now().UTC().Format(time.RFC3339)
	status := fmt.Sprintf(`{"status":{"startTime":%q,"completionTime":%q,"succeeded":1,"conditions":[
		{"type":"SuccessCriteriaMet","status":"True","lastTransitionTime":%[2]q},
		{"type":"Complete","status":"True","lastTransitionTime":%[2]q}]}}`, now, now)
	if fail {
		status = fmt.Sprintf(`{"status":{"startTime":%q,"failed":1,"conditions":[
		{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit","lastTransitionTime":%[1]q},
		{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"Job has reached the specified backoff limit","lastTransitionTime":%[1]q}]}}`, now)
	}
	if err := a.Client.Status().Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(status))); err != nil {
		t.Errorf("mark Job %s/%s finished: %v", ns, name, err)
	}
}

func TestApplyWithHooks(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "hooks"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}
	set := Set{Objects: objects(t,
		configMapDoc("", "settings", "a"),
		hookJobDoc("migrate", "pre-install,pre-upgrade", ""),
		// Not a Job: applied, not awaited, deleted once it succeeded.
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: notify, annotations: {helm.sh/hook: post-install, helm.sh/hook-delete-policy: hook-succeeded}}}`,
		// Not run by an install.
		hookDoc("cleanup", "pre-delete", ""),
	)}
	settings := ref("", "v1", "ConfigMap", ns, "settings")
	job := ref("batch", "v1", "Job", ns, "migrate")

	done := make(chan struct{})
	go func() {
		defer close(done)
		finishJob(ctx, t, a, ns, "migrate", "", false)
	}()
	res, err := a.ApplyWithHooks(ctx, owner, ns, set, HookOptions{HookTimeout: 30 * time.Second})
	inventory := res.Inventory
	<-done
	if err != nil {
		t.Fatalf("ApplyWithHooks: %v", err)
	}
	// Hooks are not inventory.
	if want := []v1alpha1.ObjectReference{settings}; !slices.Equal(unversioned(inventory), want) {
		t.Errorf("inventory = %v, want %v", inventory, want)
	}
	first := read(t, a, job)
	if first == nil || !owner.owns(first) {
		t.Fatalf("hook Job = %v, want it kept (before-hook-creation) and labelled for %s", first, owner)
	}
	if read(t, a, ref("", "v1", "ConfigMap", ns, "notify")) != nil {
		t.Error("post-install hook with hook-succeeded still exists")
	}
	if read(t, a, ref("", "v1", "ConfigMap", ns, "cleanup")) != nil {
		t.Error("pre-delete hook was applied by an install")
	}

	// An upgrade deletes the old Job (before-hook-creation) and runs a new one.
	done = make(chan struct{})
	go func() {
		defer close(done)
		finishJob(ctx, t, a, ns, "migrate", first.GetUID(), false)
	}()
	_, err = a.ApplyWithHooks(ctx, owner, ns, set, HookOptions{IsUpgrade: true, HookTimeout: 30 * time.Second})
	<-done
	if err != nil {
		t.Fatalf("upgrade ApplyWithHooks: %v", err)
	}
	if second := read(t, a, job); second == nil || second.GetUID() == first.GetUID() {
		t.Errorf("the upgrade did not run the hook Job anew: %v", second)
	}

	// Delete hooks: the pre-delete ConfigMap hook runs, and is kept.
	if err := a.RunDeleteHooks(ctx, owner, ns, set, HookPreDelete, time.Minute); err != nil {
		t.Fatalf("RunDeleteHooks: %v", err)
	}
	if read(t, a, ref("", "v1", "ConfigMap", ns, "cleanup")) == nil {
		t.Error("pre-delete hook did not run")
	}
}

// A regular object waits for the pre-install hooks: while the hook Job
// runs, nothing else exists.
func TestApplyWithHooksWaitsForPreInstall(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "hooks-wait"
	createNamespace(t, a, ns)
	set := Set{Objects: objects(t, configMapDoc("", "settings", "a"), hookJobDoc("migrate", "pre-install", ""))}

	done := make(chan struct{})
	go func() {
		defer close(done)
		r := ref("batch", "v1", "Job", ns, "migrate")
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			job, err := a.get(ctx, r)
			return job != nil, err
		})
		if err != nil {
			t.Errorf("hook Job never created: %v", err)
			return
		}
		if read(t, a, ref("", "v1", "ConfigMap", ns, "settings")) != nil {
			t.Error("ConfigMap applied before the pre-install hook finished")
		}
		finishJob(ctx, t, a, ns, "migrate", "", false)
	}()
	_, err := a.ApplyWithHooks(ctx, Owner{Name: "demo", Namespace: "team-a"}, ns, set, HookOptions{HookTimeout: 30 * time.Second})
	<-done
	if err != nil {
		t.Fatalf("ApplyWithHooks: %v", err)
	}
	if read(t, a, ref("", "v1", "ConfigMap", ns, "settings")) == nil {
		t.Error("ConfigMap missing after the hook finished")
	}
}

func TestApplyWithHooksFailure(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "hooks-fail"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}

	t.Run("failed job", func(t *testing.T) {
		set := Set{Objects: objects(t, configMapDoc("", "settings", "a"), hookJobDoc("migrate", "pre-install", "hook-failed"))}
		done := make(chan struct{})
		go func() {
			defer close(done)
			finishJob(ctx, t, a, ns, "migrate", "", true)
		}()
		res, err := a.ApplyWithHooks(ctx, owner, ns, set, HookOptions{HookTimeout: 30 * time.Second})
		inventory := res.Inventory
		<-done
		var hookErr *HookError
		if !errors.As(err, &hookErr) || hookErr.TimedOut {
			t.Fatalf("ApplyWithHooks error = %v, want a failed *HookError", err)
		}
		want := "pre-install hook Job hooks-fail/migrate failed: BackoffLimitExceeded: Job has reached the specified backoff limit"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error =\n%s\nwant it to start with\n%s", err, want)
		}
		if len(inventory) != 0 || read(t, a, ref("", "v1", "ConfigMap", ns, "settings")) != nil {
			t.Errorf("objects were applied after a failed pre-install hook: %v", inventory)
		}
		if read(t, a, ref("batch", "v1", "Job", ns, "migrate")) != nil {
			t.Error("failed hook Job with hook-failed policy still exists")
		}
	})

	t.Run("timeout", func(t *testing.T) {
		set := Set{Objects: objects(t, hookJobDoc("slow", "post-install", ""))}
		_, err := a.ApplyWithHooks(ctx, owner, ns, set, HookOptions{HookTimeout: time.Second})
		var hookErr *HookError
		if !errors.As(err, &hookErr) || !hookErr.TimedOut {
			t.Fatalf("ApplyWithHooks error = %v, want a timed-out *HookError", err)
		}
		for _, part := range []string{"post-install hook Job hooks-fail/slow did not complete within 1s", "0 active and 0 failed Pods"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("error %q does not mention %q", err, part)
			}
		}
	})
}

// The shape of the admission-webhook hooks of ingress controllers: a
// ServiceAccount, Role and RoleBinding and a Job that runs as the
// ServiceAccount, hooks of pre- and post-install in the release's namespace, which
// does not exist yet and comes with the set (Annex creates it). The
// namespace is there before the first hook; the RBAC hooks, deleted once
// they succeeded (hook-succeeded), outlive the Job, as Helm deletes them
// only when every hook of the event succeeded.
func TestHooksInTheReleasesNewNamespace(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "hooks-new-namespace"
	owner := Owner{Name: "ingress", Namespace: "team-a"}
	rbacHook := `{helm.sh/hook: "pre-install,pre-upgrade,post-install,post-upgrade", helm.sh/hook-delete-policy: "before-hook-creation,hook-succeeded"}`
	set := Set{Objects: objects(t,
		configMapDoc("", "settings", "a"),
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: admission, annotations: `+rbacHook+`}}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: admission, annotations: `+rbacHook+`},
		  rules: [{apiGroups: [""], resources: [secrets], verbs: [get, create]}]}`,
		`{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: admission, annotations: `+rbacHook+`},
		  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: admission},
		  subjects: [{kind: ServiceAccount, name: admission}]}`,
		hookJobDoc("admission-create", "pre-install,pre-upgrade", "before-hook-creation,hook-succeeded"),
		hookJobDoc("admission-patch", "post-install,post-upgrade", "before-hook-creation,hook-succeeded"),
		`{apiVersion: v1, kind: Namespace, metadata: {name: `+ns+`}}`,
	)}
	rbacWhileJobRan := map[string][]string{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, name := range []string{"admission-create", "admission-patch"} {
			job := ref("batch", "v1", "Job", ns, name)
			_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				live, err := a.get(ctx, job)
				return live != nil, err
			})
			// The Job controller would create the Job's Pod now: its
			// ServiceAccount and permissions must exist.
			for _, r := range []v1alpha1.ObjectReference{
				ref("", "v1", "ServiceAccount", ns, "admission"),
				ref("rbac.authorization.k8s.io", "v1", "Role", ns, "admission"),
				ref("rbac.authorization.k8s.io", "v1", "RoleBinding", ns, "admission"),
			} {
				if live, err := a.get(ctx, r); err == nil && live != nil {
					rbacWhileJobRan[name] = append(rbacWhileJobRan[name], r.Kind)
				}
			}
			finishJob(ctx, t, a, ns, name, "", false)
		}
	}()
	res, err := a.ApplyWithHooks(ctx, owner, ns, set, HookOptions{HookTimeout: 30 * time.Second})
	<-done
	if err != nil {
		t.Fatalf("ApplyWithHooks: %v", err)
	}
	// The RBAC hooks, deleted once the pre-install hooks succeeded, are
	// applied again for the post-install Job: Helm runs a hook at each of
	// its events.
	for _, name := range []string{"admission-create", "admission-patch"} {
		if want := []string{"ServiceAccount", "Role", "RoleBinding"}; !slices.Equal(rbacWhileJobRan[name], want) {
			t.Errorf("while the hook Job %s ran, its RBAC hooks present were %v, want %v", name, rbacWhileJobRan[name], want)
		}
	}
	for _, r := range []v1alpha1.ObjectReference{
		ref("", "v1", "ServiceAccount", ns, "admission"),
		ref("rbac.authorization.k8s.io", "v1", "Role", ns, "admission"),
		ref("rbac.authorization.k8s.io", "v1", "RoleBinding", ns, "admission"),
		ref("batch", "v1", "Job", ns, "admission-create"),
		ref("batch", "v1", "Job", ns, "admission-patch"),
	} {
		if read(t, a, r) != nil {
			t.Errorf("%s %s is still there: hook-succeeded deletes it once the event's hooks succeeded", r.Kind, r.Name)
		}
	}
	// The namespace is the release's: in the inventory, first of the
	// steps, before the CRD-less set's hooks.
	if want := []v1alpha1.ObjectReference{ref("", "v1", "Namespace", "", ns), ref("", "v1", "ConfigMap", ns, "settings")}; !slices.Equal(unversioned(res.Inventory), want) {
		t.Errorf("inventory = %v, want %v", res.Inventory, want)
	}
	if steps := res.Plan.Phases[0].Steps; len(steps) == 0 || steps[0].Name != TargetNamespaceStep {
		t.Errorf("first step = %+v, want %q", steps, TargetNamespaceStep)
	}
}

// A hook Job with spec.ttlSecondsAfterFinished is deleted by the TTL
// controller the moment it finished (ingress-nginx's admission Jobs set
// 0): gone counts as finished, as in Helm, not as a hook that never
// completes.
func TestHookJobDeletedOnceFinished(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "hooks-ttl"
	createNamespace(t, a, ns)
	job := mustObject(t, hookJobDoc("create-secret", "pre-install", ""))
	if err := unstructured.SetNestedField(job.Object, int64(0), "spec", "ttlSecondsAfterFinished"); err != nil {
		t.Fatal(err)
	}
	set := Set{Objects: append(objects(t, configMapDoc("", "settings", "a")), job)}
	go func() {
		// The TTL controller: the Job is gone as soon as it exists.
		r := ref("batch", "v1", "Job", ns, "create-secret")
		_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			live, err := a.get(ctx, r)
			if err != nil || live == nil {
				return false, err
			}
			return true, a.Client.Delete(ctx, live, client.PropagationPolicy(metav1.DeletePropagationBackground))
		})
	}()
	res, err := a.ApplyWithHooks(ctx, Owner{Name: "ttl", Namespace: "team-a"}, ns, set, HookOptions{HookTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("ApplyWithHooks: %v", err)
	}
	if want := []v1alpha1.ObjectReference{ref("", "v1", "ConfigMap", ns, "settings")}; !slices.Equal(unversioned(res.Inventory), want) {
		t.Errorf("inventory = %v, want %v", res.Inventory, want)
	}
}
