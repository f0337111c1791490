package installation

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

func TestHookAnswer(t *testing.T) {
	cases := []struct {
		name       string
		conditions string
		want       v1alpha1.HookState
		message    string
	}{
		// No status yet: no answer.
		{"silent", `[]`, v1alpha1.HookPending, ""},
		{"succeeded", `[{type: Succeeded, status: "True", message: clean}]`, v1alpha1.HookSucceeded, "clean"},
		// Failed wins over a stale Succeeded.
		{"failed", `[{type: Succeeded, status: "True"}, {type: Failed, status: "True", message: "CVE-1"}]`, v1alpha1.HookFailed, "CVE-1"},
		// Succeeded=False refuses, with the reason when there is no message.
		{"succeeded false", `[{type: Succeeded, status: "False", reason: Denied}]`, v1alpha1.HookFailed, "Denied"},
		{"kstatus ready", `[{type: Ready, status: "True"}]`, v1alpha1.HookSucceeded, ""},
		{"kstatus not ready", `[{type: Ready, status: "False", message: "bad image"}]`, v1alpha1.HookFailed, "bad image"},
		// Ready=False while Reconciling is still at work.
		{"kstatus reconciling", `[{type: Ready, status: "False"}, {type: Reconciling, status: "True"}]`, v1alpha1.HookPending, ""},
		{"unknown", `[{type: Succeeded, status: Unknown}]`, v1alpha1.HookPending, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var conds []any
			if err := yaml.Unmarshal([]byte(c.conditions), &conds); err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": conds}}}
			got, msg := hookAnswer(obj)
			if got != c.want || msg != c.message {
				t.Fatalf("got %s %q, want %s %q", got, msg, c.want, c.message)
			}
		})
	}
}

func TestHookVerdict(t *testing.T) {
	hooks := map[string]*v1alpha1.Hook{"a": {}, "b": {}}
	cases := []struct {
		name    string
		results []v1alpha1.HookResult
		want    v1alpha1.HookState
		message string
	}{
		{"all agree", []v1alpha1.HookResult{{Name: "a", State: v1alpha1.HookSucceeded}, {Name: "b", State: v1alpha1.HookIgnored}},
			v1alpha1.HookSucceeded, "hooks agreed: a; ignored: b"},
		// The failing hook is named with its own message, even while another waits.
		{"one refuses", []v1alpha1.HookResult{{Name: "a", State: v1alpha1.HookPending, Message: "waiting"}, {Name: "b", State: v1alpha1.HookFailed, Message: "CVE-1"}},
			v1alpha1.HookFailed, "hook b refused the change: CVE-1"},
		{"timed out", []v1alpha1.HookResult{{Name: "a", State: v1alpha1.HookTimedOut, Message: "did not answer within spec.timeout (2m0s)"}},
			v1alpha1.HookFailed, "hook a did not answer within spec.timeout (2m0s) (failurePolicy Fail)"},
		{"waiting", []v1alpha1.HookResult{{Name: "a", State: v1alpha1.HookPending, Message: "x"}, {Name: "b", State: v1alpha1.HookWaiting, Message: "y"}},
			v1alpha1.HookPending, "waiting for hook a: x; hook b: y"},
		// A Hook deleted since no longer holds the change.
		{"deleted hook's refusal", []v1alpha1.HookResult{{Name: "gone", State: v1alpha1.HookFailed, Message: "no"}, {Name: "a", State: v1alpha1.HookSucceeded}},
			v1alpha1.HookSucceeded, "hooks agreed: a; ignored: gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, msg := hookVerdict(c.results, hooks)
			if got != c.want || msg != c.message {
				t.Fatalf("got %s %q, want %s %q", got, msg, c.want, c.message)
			}
		})
	}
}

func TestSelectHooks(t *testing.T) {
	hook := func(name string, order int32, sel v1alpha1.HookSelector, events ...v1alpha1.HookEvent) v1alpha1.Hook {
		return v1alpha1.Hook{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HookSpec{Order: order, Selector: sel, Events: events}}
	}
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "podinfo"},
	}
	hooks := []v1alpha1.Hook{
		hook("z-all", 0, v1alpha1.HookSelector{}, v1alpha1.HookPreInstall),
		hook("a-all", 0, v1alpha1.HookSelector{}, v1alpha1.HookPreInstall),
		// Lower order runs first, whatever its name.
		hook("late-first", -1, v1alpha1.HookSelector{Extensions: []string{"podinfo"}, Clusters: []string{"hub"}}, v1alpha1.HookPreInstall),
		hook("other-ext", 0, v1alpha1.HookSelector{Extensions: []string{"redis"}}, v1alpha1.HookPreInstall),
		hook("other-cluster", 0, v1alpha1.HookSelector{Clusters: []string{"edge-1"}}, v1alpha1.HookPreInstall),
		hook("labels", 1, v1alpha1.HookSelector{Installations: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}, v1alpha1.HookPreInstall),
		hook("other-labels", 1, v1alpha1.HookSelector{Installations: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}, v1alpha1.HookPreInstall),
		hook("upgrades-only", 0, v1alpha1.HookSelector{}, v1alpha1.HookPreUpgrade),
	}
	got := strings.Join(selectHooks(hooks, inst, EventPreInstall), ",")
	if want := "late-first,a-all,z-all,labels"; got != want {
		t.Fatalf("selected %s, want %s", got, want)
	}
}

func TestImagesOf(t *testing.T) {
	docs := []string{
		`{kind: Deployment, spec: {template: {spec: {initContainers: [{image: "busybox:1"}], containers: [{image: "b:2"}, {image: "a:1"}]}}}}`,
		`{kind: CronJob, spec: {jobTemplate: {spec: {template: {spec: {containers: [{image: "cron:1"}]}}}}}}`,
		`{kind: Pod, spec: {containers: [{image: "a:1"}], ephemeralContainers: [{image: "debug:1"}]}}`,
		`{kind: ConfigMap, data: {image: "not-an-image"}}`,
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		o := map[string]any{}
		if err := yaml.Unmarshal([]byte(d), &o); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: o})
	}
	if got, want := strings.Join(imagesOf(objs), ","), "a:1,b:2,busybox:1,cron:1,debug:1"; got != want {
		t.Fatalf("images %s, want %s", got, want)
	}
}

func TestHookRequestName(t *testing.T) {
	long := strings.Repeat("a", 243) + "." + strings.Repeat("b", 9) // 253 characters, the longest name; the cut meets the dot
	for _, tc := range []struct{ installation, event, digest, want string }{
		// A short installation: the name says what it is for.
		{"podinfo", EventPreInstall, "sha256:0123456789abcdef", "podinfo-preinstall-0123456789"},
		// The longest installation name: shortened to an object name (checked below).
		{long, EventPreUpgrade, "sha256:0123456789abcdef", ""},
	} {
		got := hookRequestName(tc.installation, tc.event, tc.digest)
		if tc.want != "" && got != tc.want {
			t.Errorf("hookRequestName(%q) = %q, want %q", tc.installation, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("hookRequestName(%q) = %q: %v", tc.installation, got, errs)
		}
	}
	// Each change of a long-named installation has its own request.
	if hookRequestName(long, EventPreInstall, "sha256:aa") == hookRequestName(long, EventPreInstall, "sha256:bb") {
		t.Error("two changes of a long-named installation share a HookRequest name")
	}
}

// TestHookWatchesRoute: an update of a hook resource that a reconcile
// waits on wakes that reconcile and enqueues nothing; once the wait is
// withdrawn, or for a resource nobody waits on, the update enqueues the
// installation its labels name, once.
func TestHookWatchesRoute(t *testing.T) {
	w := &hookWatches{}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-preinstall-1-scan", Labels: map[string]string{
		v1alpha1.LabelHook: "scan", v1alpha1.LabelInstallationName: "web", v1alpha1.LabelInstallationNamespace: "team",
	}}}
	key := types.NamespacedName{Namespace: "team", Name: "web-preinstall-1-scan"}
	enqueued := func() bool {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		w.handler().Update(context.Background(), event.UpdateEvent{ObjectOld: obj, ObjectNew: obj}, q)
		return q.Len() == 1
	}

	wt := &hookWaiter{wake: make(chan struct{}, 1)}
	w.expect(key, wt)
	if enqueued() {
		t.Fatal("a change waited on enqueued the installation")
	}
	select {
	case <-wt.wake:
	default:
		t.Fatal("the waiting reconcile was not woken")
	}
	if w.withdraw(key, wt) {
		t.Fatal("withdraw after the watch took the wait must report it was taken")
	}
	if !enqueued() {
		t.Fatal("a change nobody waits on must enqueue the installation")
	}

	w.expect(key, wt)
	if !w.withdraw(key, wt) {
		t.Fatal("withdraw of a wait not taken must report so")
	}
	if !enqueued() {
		t.Fatal("a change after the wait was withdrawn must enqueue the installation")
	}
}

// TestHookAskingWaitsAgainAfterStopping: when an answer arrives as the
// wait ends, the reconcile stops waiting and reads the resources once
// more, which registers its waits again (the resources it created are
// read as expected ones); that must work, and stopping again must
// withdraw them.
func TestHookAskingWaitsAgainAfterStopping(t *testing.T) {
	w := &hookWatches{}
	a := &hookAsking{r: &Reconciler{hookKinds: w}}
	key := types.NamespacedName{Namespace: "team", Name: "web-preinstall-1-scan"}
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()

	a.expect(key)
	w.route(context.Background(), obj, q) // the answer, as the wait ends
	if !a.stopWaiting() {
		t.Fatal("stopWaiting must report the answer the watch handed over")
	}
	a.expect(key) // reading once more
	if a.stopWaiting() {
		t.Fatal("nothing changed during the second read")
	}
	if len(w.waiters) != 0 {
		t.Fatalf("waits left registered: %v", w.waiters)
	}
}

// TestInstallationOfHookObject: a hook resource's change wakes the
// installation its labels name; when the name is longer than a label
// value, the HookRequest that controls the resource names it in full.
func TestInstallationOfHookObject(t *testing.T) {
	long := "web-" + strings.Repeat("w", 100)
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&v1alpha1.HookRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "long-request"},
		Spec:       v1alpha1.HookRequestSpec{Installation: long},
	}).Build()
	resource := func(installation, request string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "r", Labels: map[string]string{
			v1alpha1.LabelHook: "scan", v1alpha1.LabelInstallationName: names.LabelValue(installation), v1alpha1.LabelInstallationNamespace: "team",
		}}}
		if request != "" {
			o.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "HookRequest",
				Name: request, Controller: ptr.To(true)}}
		}
		return o
	}
	for _, tc := range []struct {
		name string
		obj  *metav1.PartialObjectMetadata
		want string // "" for no request
	}{
		// A name that fits a label value is the label.
		{"short", resource("web", ""), "web"},
		// A long name: the controlling HookRequest gives it in full.
		{"long", resource(long, "long-request"), long},
		// Its HookRequest gone: the label is all there is (it names no installation).
		{"long without its request", resource(long, "gone"), names.LabelValue(long)},
		// Not a hook resource.
		{"unlabelled", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "r"}}, ""},
	} {
		got := installationOfHookObject(context.Background(), reader, tc.obj)
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%s: %v, want nothing", tc.name, got)
		case tc.want != "" && (len(got) != 1 || got[0].Name != tc.want || got[0].Namespace != "team"):
			t.Errorf("%s: %v, want team/%s", tc.name, got, tc.want)
		}
	}
}
