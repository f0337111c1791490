package batch

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// recordingQueue records the adds a handler makes.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	adds []string // "<name>" at once, "<name>+<delay>" delayed
}

func (q *recordingQueue) Add(r reconcile.Request) { q.adds = append(q.adds, r.Name) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.adds = append(q.adds, r.Name+"+"+d.String())
}

// byOwnerLabel names the object's "owner" label.
func byOwnerLabel(o client.Object) (reconcile.Request, bool) {
	name := o.GetLabels()["owner"]
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, name != ""
}

func owned(owner string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o", Labels: map[string]string{"owner": owner}}}
}

func check(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("adds %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("adds %v, want %v", got, want)
		}
	}
}

func TestAtOnceThenOncePerWindow(t *testing.T) {
	now := time.Unix(0, 0)
	b := New(time.Second, byOwnerLabel)
	b.now = func() time.Time { return now }
	q := &recordingQueue{}
	b.Add(owned("a"), q) // quiet: at once
	now = now.Add(300 * time.Millisecond)
	b.Add(owned("a"), q) // within the window: at its end
	b.Add(owned("b"), q) // another request has its own window
	now = now.Add(900 * time.Millisecond)
	b.Add(owned("a"), q) // the window is over: at once again
	b.Add(owned(""), q)  // names nothing
	check(t, q.adds, []string{"a", "a+700ms", "b", "a"})
}

func TestUpdateWakesOldAndNew(t *testing.T) {
	q := &recordingQueue{}
	h := New(time.Second, byOwnerLabel).Handler()
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: owned("old"), ObjectNew: owned("new")}, q)
	check(t, q.adds, []string{"new", "old"})
	q.adds = nil
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: owned("same"), ObjectNew: owned("same")}, q)
	check(t, q.adds, []string{"same"})
}
