package hookrequest

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// TestHookWatchesRoute: an update of a hook resource that a reconcile
// waits on wakes that reconcile and enqueues nothing; once the wait is
// withdrawn, or for a resource nobody waits on, the update enqueues the
// installation its labels name, once.
func TestHookWatchesRoute(t *testing.T) {
	w := &watches{}
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

	wt := &waiter{wake: make(chan struct{}, 1)}
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
	w := &watches{}
	a := &asking{k: &Asker{watches: w}}
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
		got := installationOf(context.Background(), reader, tc.obj)
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%s: %v, want nothing", tc.name, got)
		case tc.want != "" && (len(got) != 1 || got[0].Name != tc.want || got[0].Namespace != "team"):
			t.Errorf("%s: %v, want team/%s", tc.name, got, tc.want)
		}
	}
}
