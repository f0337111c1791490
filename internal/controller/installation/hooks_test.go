package installation_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// The hooks of these tests are of kinds in test groups, answered by a
// small controller running in the test (answerHooks).

// hookCRD defines a namespaced kind whose spec and status take anything,
// as a hook's CRD must accept spec.annex.
func hookCRD(group, kind string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	anything := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": anything, "status": anything},
				}},
			}},
		},
	}
}

// installCRD creates crd unless it exists, and waits until it is served.
func installCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: "v1", Kind: crd.Spec.Names.ListKind})
		return env.Client.List(ctx, list)
	})
}

var scanRequestGVK = schema.GroupVersionKind{Group: "hooks.test.annex.dev", Version: "v1", Kind: "ScanRequest"}

// registerHook creates a Hook of kind gvk for the extension, deleted when
// the test ends.
func registerHook(t *testing.T, name, extension string, gvk schema.GroupVersionKind, mutate ...func(*v1alpha1.Hook)) *v1alpha1.Hook {
	t.Helper()
	h := &v1alpha1.Hook{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.HookSpec{
			Resource: v1alpha1.HookResource{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
			Events:   []v1alpha1.HookEvent{v1alpha1.HookPreInstall, v1alpha1.HookPreUpgrade},
			Selector: v1alpha1.HookSelector{Extensions: []string{extension}},
		},
	}
	for _, m := range mutate {
		m(h)
	}
	if err := env.Client.Create(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), h) })
	return h
}

// answer is what the in-test hook says of a resource: a condition type
// (Succeeded or Failed) and message, or "" to stay silent.
type answer func(obj *unstructured.Unstructured) (condition, message string)

// answerHooks runs a hook controller for gvk in ns until the test ends:
// it gives every resource without conditions the answer's condition.
// The answer may change while it runs (set).
func answerHooks(t *testing.T, gvk schema.GroupVersionKind, ns string, initial answer) (set func(answer)) {
	t.Helper()
	var mu sync.Mutex
	current := initial
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := env.Client.List(ctx, list, client.InNamespace(ns)); err == nil {
				for i := range list.Items {
					obj := &list.Items[i]
					if conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions"); len(conds) > 0 {
						continue
					}
					mu.Lock()
					decide := current
					mu.Unlock()
					condition, message := decide(obj)
					if condition == "" {
						continue
					}
					_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{
						"type": condition, "status": "True", "reason": "Scanned", "message": message,
						"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
					}}, "status", "conditions")
					_ = env.Client.Status().Update(ctx, obj)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func(a answer) {
		mu.Lock()
		defer mu.Unlock()
		current = a
	}
}

func silent(*unstructured.Unstructured) (string, string) { return "", "" }

// hookResources lists the resources of gvk in ns.
func hookResources(t *testing.T, gvk schema.GroupVersionKind, ns string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func hookRequests(t *testing.T, ns string) []v1alpha1.HookRequest {
	t.Helper()
	var list v1alpha1.HookRequestList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// assertNotApplied fails when the chart's ConfigMap exists.
func assertNotApplied(t *testing.T, ns, name string) {
	t.Helper()
	if _, err := get(t, configMapGVK, ns, name); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap %s/%s exists (err=%v): nothing may be applied before the hooks agree", ns, name, err)
	}
}

// TestHookRefusesThenAFreshRequestAllows: a hook's refusal blocks the
// install with the hook's own message and nothing is applied; new values
// are a new change, with a new HookRequest and a new resource, which the
// hook allows, and the install goes on.
func TestHookRefusesThenAFreshRequestAllows(t *testing.T) {
	ctx := context.Background()
	installCRD(t, hookCRD(scanRequestGVK.Group, scanRequestGVK.Kind))
	ns, _ := setup(t, podinfoChart("hooked1", "1.0.0", nil))
	set := answerHooks(t, scanRequestGVK, ns, func(obj *unstructured.Unstructured) (string, string) {
		images, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "annex", "images")
		return v1alpha1.ConditionFailed, "image " + strings.Join(images, ", ") + " has 3 critical vulnerabilities"
	})
	registerHook(t, "scan-"+ns, "hooked1", scanRequestGVK)

	inst := install(t, ns, "web", "hooked1", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHookRefused)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(c.Message, "hook scan-"+ns+" refused the change: image ghcr.io/stefanprodan/podinfo:6.5.0 has 3 critical vulnerabilities") {
		t.Fatalf("Ready message does not quote the hook: %s", c.Message)
	}
	assertNotApplied(t, ns, "web-config")
	if ch := got.Status.Change; ch == nil || ch.Hooks == nil || ch.Hooks.State != v1alpha1.HookFailed || ch.Event != "PreInstall" {
		t.Fatalf("status.change: %+v", ch)
	}

	// The resource carries the contract's spec.annex.
	scans := hookResources(t, scanRequestGVK, ns)
	if len(scans) != 1 {
		t.Fatalf("%d ScanRequests, want 1", len(scans))
	}
	first := scans[0]
	annex, _, _ := unstructured.NestedMap(first.Object, "spec", "annex")
	if annex["extension"] != "hooked1" || annex["event"] != "PreInstall" || annex["toVersion"] != "1.0.0" ||
		annex["digest"] != got.Status.Change.Digest || !strings.HasPrefix(fmt.Sprint(annex["artifactDigest"]), "sha256:") {
		t.Fatalf("spec.annex: %v", annex)
	}
	if inst, _, _ := unstructured.NestedStringMap(annex, "installation"); inst["namespace"] != ns || inst["name"] != "web" {
		t.Fatalf("spec.annex.installation: %v", inst)
	}
	ref, _, _ := unstructured.NestedStringMap(annex, "objects")
	sec := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ref["namespace"], Name: ref["name"]}, sec); err != nil {
		t.Fatalf("objects Secret %v: %v", ref, err)
	}
	if objs := string(sec.Data[ref["key"]]); !strings.Contains(objs, "kind: Deployment") || !strings.Contains(objs, "name: web-config") {
		t.Fatalf("objects Secret key %q:\n%s", ref["key"], objs)
	}

	// The request records the failure, naming the hook.
	reqs := hookRequests(t, ns)
	if len(reqs) != 1 || !meta.IsStatusConditionTrue(reqs[0].Status.Conditions, v1alpha1.ConditionFailed) ||
		len(reqs[0].Status.Hooks) != 1 || reqs[0].Status.Hooks[0].State != v1alpha1.HookFailed {
		t.Fatalf("HookRequests: %+v", reqs)
	}

	// New values: a new change, a fresh request and resource; this time
	// the hook agrees.
	set(func(*unstructured.Unstructured) (string, string) {
		return v1alpha1.ConditionSucceeded, "no vulnerabilities"
	})
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"message":"scanned"}`)}
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	cm, err := get(t, configMapGVK, ns, "web-config")
	if err != nil {
		t.Fatal(err)
	}
	if msg, _, _ := unstructured.NestedString(cm.Object, "data", "message"); msg != "scanned" {
		t.Fatalf("message %q, want the new values'", msg)
	}
	if got.Status.Change != nil {
		t.Fatalf("status.change stays after the change was applied: %+v", got.Status.Change)
	}
	scans = hookResources(t, scanRequestGVK, ns)
	if len(scans) != 2 || scans[0].GetName() == scans[1].GetName() {
		t.Fatalf("want the first ScanRequest and a fresh one, got %d", len(scans))
	}
	for _, s := range scans {
		if s.GetName() == first.GetName() {
			if conds, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions"); !strings.Contains(fmt.Sprint(conds), v1alpha1.ConditionFailed) {
				t.Fatalf("the first ScanRequest's refusal changed: %v", conds)
			}
		}
	}
	reqs = hookRequests(t, ns)
	if len(reqs) != 2 {
		t.Fatalf("%d HookRequests, want 2 (one per change)", len(reqs))
	}

	// Superseded requests are trimmed to the three newest.
	for _, msg := range []string{"third", "fourth"} {
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"message":"` + msg + `"}`)}
		if err := env.Client.Patch(ctx, got, patch); err != nil {
			t.Fatal(err)
		}
		got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	}
	eventually(t, 30*time.Second, func() error {
		if n := len(hookRequests(t, ns)); n != 3 {
			return fmt.Errorf("%d HookRequests, want the 3 newest", n)
		}
		return nil
	})
}

// TestHookTimeoutFollowsFailurePolicy: a hook that never answers holds
// the change under failurePolicy Fail and lets it go on under Ignore.
func TestHookTimeoutFollowsFailurePolicy(t *testing.T) {
	installCRD(t, hookCRD(scanRequestGVK.Group, scanRequestGVK.Kind))
	ns, _ := setup(t, podinfoChart("hooked2a", "1.0.0", nil), podinfoChart("hooked2b", "1.0.0", nil))
	answerHooks(t, scanRequestGVK, ns, silent)
	quick := func(policy v1alpha1.HookFailurePolicy) func(*v1alpha1.Hook) {
		return func(h *v1alpha1.Hook) {
			h.Spec.Timeout = metav1.Duration{Duration: time.Second}
			h.Spec.FailurePolicy = policy
		}
	}
	registerHook(t, "fail-"+ns, "hooked2a", scanRequestGVK, quick(v1alpha1.HookFail))
	registerHook(t, "ignore-"+ns, "hooked2b", scanRequestGVK, quick(v1alpha1.HookIgnore))

	held := install(t, ns, "held", "hooked2a", "")
	passed := install(t, ns, "passed", "hooked2b", "")
	got := waitCondition(t, held, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHookRefused)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "did not answer within spec.timeout (1s)") {
		t.Fatalf("Ready message: %s", c.Message)
	}
	assertNotApplied(t, ns, "held-config")

	waitCondition(t, passed, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if _, err := get(t, configMapGVK, ns, "passed-config"); err != nil {
		t.Fatal(err)
	}
	for _, req := range hookRequests(t, ns) {
		if req.Spec.Installation != "passed" {
			continue
		}
		if len(req.Status.Hooks) != 1 || req.Status.Hooks[0].State != v1alpha1.HookIgnored ||
			!meta.IsStatusConditionTrue(req.Status.Conditions, v1alpha1.ConditionSucceeded) {
			t.Fatalf("HookRequest of the ignored hook: %+v", req.Status)
		}
	}
}

// TestHookKindNotServed: a Hook whose CRD is not installed says so in its
// Ready condition, and the installation it selects waits with a clear
// reason (failurePolicy Fail); once the CRD is installed, the hook is
// asked and its answer lets the install go on.
func TestHookKindNotServed(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "later.test.annex.dev", Version: "v1", Kind: "PolicyCheck"}
	ns, _ := setup(t, podinfoChart("hooked3", "1.0.0", nil))
	h := registerHook(t, "later-"+ns, "hooked3", gvk)
	eventually(t, 30*time.Second, func() error {
		got := &v1alpha1.Hook{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(h), got); err != nil {
			return err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonKindNotServed ||
			!strings.Contains(c.Message, "kind PolicyCheck of later.test.annex.dev/v1 is not served") {
			return fmt.Errorf("Hook Ready: %+v", c)
		}
		return nil
	})
	// A cluster-scoped kind cannot be a hook's: its resources live in
	// installations' namespaces.
	clusterScoped := registerHook(t, "cluster-scoped-"+ns, "none-"+ns, schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"})
	eventually(t, 30*time.Second, func() error {
		got := &v1alpha1.Hook{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(clusterScoped), got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Reason != v1alpha1.ReasonClusterScopedKind {
			return fmt.Errorf("Hook Ready: %+v", c)
		}
		return nil
	})
	inst := install(t, ns, "web", "hooked3", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHookPending)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "is not served by the API server") {
		t.Fatalf("Ready message: %s", c.Message)
	}
	assertNotApplied(t, ns, "web-config")

	answerHooks(t, gvk, ns, func(*unstructured.Unstructured) (string, string) { return v1alpha1.ConditionSucceeded, "ok" })
	installCRD(t, hookCRD(gvk.Group, gvk.Kind))
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	got2 := &v1alpha1.Hook{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(h), got2); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got2.Status.Conditions, v1alpha1.ConditionReady) {
		t.Fatalf("Hook Ready once its CRD is served: %+v", got2.Status.Conditions)
	}
	// The Hook's Events tell both turns, once each.
	eventually(t, 30*time.Second, func() error {
		if got, want := hookEvents(t, h.Name), []string{"Warning KindNotServed", "Normal Ready"}; !slices.Equal(got, want) {
			return fmt.Errorf("Events of Hook %s: %q, want %q", h.Name, got, want)
		}
		return nil
	})
}

// hookEvents lists the Events recorded on a Hook (cluster-scoped: in
// namespace default), oldest first, as "type reason".
func hookEvents(t *testing.T, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Hook" && e.Regarding.Name == name {
			out = append(out, e.Type+" "+e.Reason)
		}
	}
	return out
}

// TestHookPreUninstall: PreUninstall hooks run before anything is
// deleted; the installation's objects stay until the hook agrees.
func TestHookPreUninstall(t *testing.T) {
	ctx := context.Background()
	installCRD(t, hookCRD(scanRequestGVK.Group, scanRequestGVK.Kind))
	ns, _ := setup(t, podinfoChart("hooked4", "1.0.0", nil))
	set := answerHooks(t, scanRequestGVK, ns, silent)
	registerHook(t, "bye-"+ns, "hooked4", scanRequestGVK, func(h *v1alpha1.Hook) {
		h.Spec.Events = []v1alpha1.HookEvent{v1alpha1.HookPreUninstall}
	})
	inst := install(t, ns, "web", "hooked4", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if n := len(hookResources(t, scanRequestGVK, ns)); n != 0 {
		t.Fatalf("%d ScanRequests for an install the hook does not judge", n)
	}
	if err := env.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		scans := hookResources(t, scanRequestGVK, ns)
		if len(scans) != 1 {
			return fmt.Errorf("%d ScanRequests, want 1", len(scans))
		}
		if ev, _, _ := unstructured.NestedString(scans[0].Object, "spec", "annex", "event"); ev != "PreUninstall" {
			return fmt.Errorf("event %q", ev)
		}
		return nil
	})
	if _, err := get(t, configMapGVK, ns, "web-config"); err != nil {
		t.Fatalf("the objects must stay until the hook answers: %v", err)
	}
	set(func(*unstructured.Unstructured) (string, string) { return v1alpha1.ConditionSucceeded, "backed up" })
	eventually(t, 60*time.Second, func() error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(got), &v1alpha1.ExtensionInstallation{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("installation still present (err=%v)", err)
		}
		return nil
	})
	if _, err := get(t, configMapGVK, ns, "web-config"); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap still there after uninstall: %v", err)
	}
}

// builtinCatalog creates the Catalog of the built-in extensions once for
// the package, and waits until it is Ready.
func builtinCatalog(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: "builtin"},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}}},
	}
	if err := env.Client.Create(ctx, cat); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		got := &v1alpha1.Catalog{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cat), got); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady) {
			return fmt.Errorf("builtin catalog not ready: %+v", got.Status.Conditions)
		}
		return nil
	})
}

// TestImagePolicyHook: the built-in image-policy extension refuses a
// chart whose image comes from a registry outside its allow-list, naming
// the image, and lets it go on once the allow-list admits it.
func TestImagePolicyHook(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, podinfoChart("hooked5", "1.0.0", nil))
	builtinCatalog(t)
	policy := install(t, ns, "images-"+ns, "image-policy", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"allowedRegistries":["registry.k8s.io"],"selector":{"extensions":["hooked5"]}}`)}
	})
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), policy) })
	policy = waitCondition(t, policy, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)

	inst := install(t, ns, "web", "hooked5", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHookRefused)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	if !strings.Contains(c.Message, "ghcr.io/stefanprodan/podinfo:6.5.0 (not from an allowed registry)") {
		t.Fatalf("Ready message does not name the image: %s", c.Message)
	}
	assertNotApplied(t, ns, "web-config")

	// The admin admits ghcr.io: the same change, judged again, goes on.
	patch := client.MergeFrom(policy.DeepCopy())
	policy.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"allowedRegistries":["registry.k8s.io","ghcr.io"],"selector":{"extensions":["hooked5"]}}`)}
	if err := env.Client.Patch(ctx, policy, patch); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if _, err := get(t, configMapGVK, ns, "web-config"); err != nil {
		t.Fatal(err)
	}
}

// TestHookOrder: a hook of a higher spec.order is asked only once every
// hook of a lower order agreed.
func TestHookOrder(t *testing.T) {
	installCRD(t, hookCRD(scanRequestGVK.Group, scanRequestGVK.Kind))
	ns, _ := setup(t, podinfoChart("hooked6", "1.0.0", nil))
	first, second := "first-"+ns, "second-"+ns
	set := answerHooks(t, scanRequestGVK, ns, silent)
	registerHook(t, second, "hooked6", scanRequestGVK, func(h *v1alpha1.Hook) { h.Spec.Order = 10 })
	registerHook(t, first, "hooked6", scanRequestGVK, func(h *v1alpha1.Hook) { h.Spec.Order = -10 })
	inst := install(t, ns, "web", "hooked6", "")

	hooksAsked := func() string {
		var names []string
		for _, s := range hookResources(t, scanRequestGVK, ns) {
			names = append(names, s.GetLabels()[v1alpha1.LabelHook])
		}
		slices.Sort(names)
		return strings.Join(names, ",")
	}
	eventually(t, 30*time.Second, func() error {
		if got := hooksAsked(); got != first {
			return fmt.Errorf("hooks asked: %q, want only %s", got, first)
		}
		return nil
	})
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHookPending)
	if got.Status.Change == nil || got.Status.Change.Hooks == nil || !strings.Contains(got.Status.Change.Hooks.Message, "hook "+second+": runs after the hooks of a lower spec.order") {
		t.Fatalf("status.change.hooks: %+v", got.Status.Change)
	}
	if asked := hooksAsked(); asked != first {
		t.Fatalf("hooks asked before the first agreed: %s", asked)
	}
	set(func(*unstructured.Unstructured) (string, string) { return v1alpha1.ConditionSucceeded, "fine" })
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	if asked := hooksAsked(); asked != first+","+second {
		t.Fatalf("hooks asked: %s, want both", asked)
	}
}

// TestHookRequestDeletedAsksAgain: deleting a refused change's
// HookRequest asks the hooks again about the same change, with a fresh
// resource; the earlier answer does not count.
func TestHookRequestDeletedAsksAgain(t *testing.T) {
	ctx := context.Background()
	installCRD(t, hookCRD(scanRequestGVK.Group, scanRequestGVK.Kind))
	ns, _ := setup(t, podinfoChart("hooked7", "1.0.0", nil))
	set := answerHooks(t, scanRequestGVK, ns, func(*unstructured.Unstructured) (string, string) {
		return v1alpha1.ConditionFailed, "scanner database out of date"
	})
	registerHook(t, "again-"+ns, "hooked7", scanRequestGVK)
	inst := install(t, ns, "web", "hooked7", "")
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonHookRefused)
	reqs := hookRequests(t, ns)
	if len(reqs) != 1 {
		t.Fatalf("%d HookRequests, want 1", len(reqs))
	}
	old := reqs[0]

	set(func(*unstructured.Unstructured) (string, string) { return v1alpha1.ConditionSucceeded, "scanned" })
	if err := env.Client.Delete(ctx, &old); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	reqs = hookRequests(t, ns)
	if len(reqs) != 1 || reqs[0].Name != old.Name || reqs[0].UID == old.UID {
		t.Fatalf("want a new HookRequest of the same name, got %+v", reqs)
	}
	scans := hookResources(t, scanRequestGVK, ns)
	if len(scans) != 1 || !metav1.IsControlledBy(&scans[0], &reqs[0]) {
		t.Fatalf("want one ScanRequest, of the new request: %+v", scans)
	}
	sec := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: reqs[0].Name}, sec); err != nil || !metav1.IsControlledBy(sec, &reqs[0]) {
		t.Fatalf("objects Secret of the new request: %v %+v", err, sec.OwnerReferences)
	}
}

// TestHookAnsweredAtOnceTakesOneReconcile: the reconcile that asks a
// hook waits for the answer, woken by the watch of the hook's kind, and
// goes on to apply. Nothing is ever seen waiting on the hook, and the
// HookRequest's status is written once, with the answer.
func TestHookAnsweredAtOnceTakesOneReconcile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gvk := schema.GroupVersionKind{Group: "quick.test.annex.dev", Version: "v1", Kind: "QuickCheck"}
	installCRD(t, hookCRD(gvk.Group, gvk.Kind))
	ns, _ := setup(t, podinfoChart("hooked-quick", "1.0.0", nil))
	answerHooks(t, gvk, ns, func(*unstructured.Unstructured) (string, string) {
		return v1alpha1.ConditionSucceeded, "looks fine"
	})
	registerHook(t, "quick-"+ns, "hooked-quick", gvk)

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	installs, err := wc.Watch(ctx, &v1alpha1.ExtensionInstallationList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer installs.Stop()
	requests, err := wc.Watch(ctx, &v1alpha1.HookRequestList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer requests.Stop()

	install(t, ns, "web", "hooked-quick", "")
	var waited []string
	requestWrites := map[string][]string{} // request → resourceVersions seen after its creation
	for ready := false; !ready; {
		select {
		case ev := <-installs.ResultChan():
			got, ok := ev.Object.(*v1alpha1.ExtensionInstallation)
			if !ok {
				t.Fatalf("watch of installations: %v", ev.Object)
			}
			if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c != nil {
				if c.Reason == v1alpha1.ReasonHookPending {
					waited = append(waited, c.Message)
				}
				ready = c.Status == metav1.ConditionTrue
			}
		case ev := <-requests.ResultChan():
			if req, ok := ev.Object.(*v1alpha1.HookRequest); ok && ev.Type == "MODIFIED" {
				requestWrites[req.Name] = append(requestWrites[req.Name], fmt.Sprintf("%+v", req.Status.Hooks))
			}
		case <-ctx.Done():
			t.Fatalf("the installation did not become Ready: %v", ctx.Err())
		}
	}
	if len(waited) > 0 {
		t.Errorf("the installation was seen waiting on the hook (a second reconcile took the answer): %q", waited)
	}
	reqs := hookRequests(t, ns)
	if len(reqs) != 1 || !meta.IsStatusConditionTrue(reqs[0].Status.Conditions, v1alpha1.ConditionSucceeded) {
		t.Fatalf("HookRequests: %+v", reqs)
	}
	if w := requestWrites[reqs[0].Name]; len(w) > 1 {
		t.Errorf("HookRequest %s written %d times, want once with the answer: %v", reqs[0].Name, len(w), w)
	}
}
