package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply"
	"github.com/annex-platform/annex/internal/apply/reqcount"
	"github.com/annex-platform/annex/internal/testenv"
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime, which complains, with a
	// stack trace, when no logger is set.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "annex-bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	code := m.Run()
	printTable(os.Stdout)
	return code
}

// workers is how many installations (or apps, for the plain client) are
// worked on at once, as a controller with 10 concurrent reconciles would.
const workers = 10

func BenchmarkN100(b *testing.B) { benchmarkSize(b, 100) }
func BenchmarkN500(b *testing.B) { benchmarkSize(b, 500) }
func BenchmarkN1K(b *testing.B)  { benchmarkSize(b, 1000) }

func benchmarkSize(b *testing.B, n int) {
	b.Run("raw", func(b *testing.B) { benchRaw(b, n) })
	b.Run("applier", func(b *testing.B) { benchApplier(b, n) })
}

// unlimited returns a copy of cfg without client-side rate limits, so
// that the API server alone sets the pace.
func unlimited(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst = -1, 0
	return out
}

// appObjects are the four objects of app i in namespace ns: what a small
// chart renders.
func appObjects(ns string, i int) []client.Object {
	name := fmt.Sprintf("app-%d", i)
	labels := map[string]string{"app": name}
	meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	return []client.Object{
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta},
		&corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: meta,
			Spec: corev1.ServiceSpec{
				Selector: labels,
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			},
		},
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: name,
						Containers: []corev1.Container{{
							Name:  "web",
							Image: "registry.example/web:1.0",
							Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						}},
					},
				},
			},
		},
		&networkingv1.Ingress{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
			ObjectMeta: meta,
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
				Host: name + ".example",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: name, Port: networkingv1.ServiceBackendPort{Number: 80},
						}},
					}},
				}},
			}}},
		},
	}
}

// appSet is appObjects as the applier receives them from a renderer.
func appSet(b *testing.B, ns string, i int) apply.Set {
	var set apply.Set
	for _, o := range appObjects(ns, i) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		// Renderers never send the zero timestamps typed objects carry.
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		set.Objects = append(set.Objects, u)
	}
	return set
}

// parallel calls fn(0) … fn(n-1) on workers goroutines and returns the
// first error.
func parallel(n int, fn func(i int) error) error { return parallelOn(workers, n, fn) }

// parallelOn calls fn(0) … fn(n-1) on k goroutines and returns the first
// error.
func parallelOn(k, n int, fn func(i int) error) error {
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range k {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

func createNamespace(b *testing.B, c client.Client, name string) {
	b.Helper()
	if err := c.Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		b.Fatal(err)
	}
}

// benchRaw creates the objects of n apps with a plain client, then
// deletes them: the floor for any applier.
func benchRaw(b *testing.B, n int) {
	env := testenv.Start(b)
	counter := &reqcount.Counter{}
	c, err := client.New(counter.Wrap(unlimited(env.Config)), client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	var toCreate, toDelete, apiCreate, apiDelete time.Duration
	var created, deleted reqcount.Counts
	b.ResetTimer()
	for iter := range b.N {
		b.StopTimer()
		ns := fmt.Sprintf("raw-%d", iter)
		createNamespace(b, env.Client, ns)
		before, apiBefore := counter.Snapshot(), controlPlaneCPU(b)
		b.StartTimer()
		start := time.Now()
		err := parallel(n, func(i int) error {
			for _, o := range appObjects(ns, i) {
				if err := c.Create(ctx, o); err != nil {
					return fmt.Errorf("create %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
				}
			}
			return nil
		})
		toCreate += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		created = addCounts(created, counter.Snapshot().Sub(before))
		apiCreate += controlPlaneCPU(b) - apiBefore

		// Nothing holds a finalizer here, so an object is gone when its
		// DELETE returns.
		before, apiBefore = counter.Snapshot(), controlPlaneCPU(b)
		start = time.Now()
		err = parallel(n, func(i int) error {
			for _, o := range appObjects(ns, i) {
				if err := c.Delete(ctx, o); err != nil {
					return fmt.Errorf("delete %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
				}
			}
			return nil
		})
		toDelete += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		deleted = addCounts(deleted, counter.Snapshot().Sub(before))
		apiDelete += controlPlaneCPU(b) - apiBefore
	}
	b.StopTimer()
	installs := float64(b.N * n)
	r := result{
		toReady: toCreate / time.Duration(b.N), toDelete: toDelete / time.Duration(b.N),
		reqPerInstall: float64(created.Total) / installs, writesPerInstall: float64(created.Writes) / installs,
		reqPerDelete: float64(deleted.Total) / installs,
		apiInstall:   apiCreate / time.Duration(b.N*n), apiDelete: apiDelete / time.Duration(b.N*n),
		idleWritesPerHour: -1, load: loadavg(),
	}
	b.ReportMetric(float64(4*n)/r.toReady.Seconds(), "objects/s")
	report(b, n, "raw", r)
}

// benchApplier installs n apps, one installation each, through one
// Applier (as one cluster's target in the controller): apply and wait
// until ready, re-apply unchanged, diff, and delete.
func benchApplier(b *testing.B, n int) {
	env := testenv.Start(b)
	counter := &reqcount.Counter{}
	a, err := apply.New(counter.Wrap(unlimited(env.Config)))
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	var (
		toReady, toDelete              time.Duration
		install, noop, diff, uninstall reqcount.Counts
	)
	b.ResetTimer()
	for iter := range b.N {
		b.StopTimer()
		ns := fmt.Sprintf("annex-%d", iter)
		createNamespace(b, env.Client, ns)
		owners := make([]apply.Owner, n)
		sets := make([]apply.Set, n)
		inventories := make([][]v1alpha1.ObjectReference, n)
		ready := make([]bool, n)
		for i := range n {
			owners[i] = apply.Owner{Name: fmt.Sprintf("app-%d-%d", iter, i), Namespace: "annex-system"}
			sets[i] = appSet(b, ns, i)
		}
		b.StartTimer()

		before := counter.Snapshot()
		start := time.Now()
		if err := parallel(n, func(i int) error {
			res, err := a.ApplyWithOptions(ctx, owners[i], ns, sets[i], apply.ApplyOptions{})
			inventories[i], ready[i] = res.Inventory, res.Health.Ready
			return err
		}); err != nil {
			b.Fatal(err)
		}
		if err := waitReady(ctx, a, inventories, ready); err != nil {
			b.Fatal(err)
		}
		toReady += time.Since(start)
		install = addCounts(install, counter.Snapshot().Sub(before))

		// Nothing changed: a re-apply and a diff must not write.
		before = counter.Snapshot()
		if err := parallel(n, func(i int) error {
			_, err := a.Apply(ctx, owners[i], ns, sets[i])
			return err
		}); err != nil {
			b.Fatal(err)
		}
		noop = addCounts(noop, counter.Snapshot().Sub(before))
		before = counter.Snapshot()
		if err := parallel(n, func(i int) error {
			drifts, _, err := a.Diff(ctx, owners[i], sets[i], ns)
			if err == nil && len(drifts) > 0 {
				err = fmt.Errorf("installation %s drifted without a change: %+v", owners[i], drifts)
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
		diff = addCounts(diff, counter.Snapshot().Sub(before))

		before = counter.Snapshot()
		start = time.Now()
		if err := deleteAll(ctx, a, owners, inventories); err != nil {
			b.Fatal(err)
		}
		toDelete += time.Since(start)
		uninstall = addCounts(uninstall, counter.Snapshot().Sub(before))
	}
	b.StopTimer()
	runs := float64(b.N)
	installs := runs * float64(n)
	b.ReportMetric(toReady.Seconds()/runs, "s-to-ready")
	b.ReportMetric(toDelete.Seconds()/runs, "s-to-delete")
	b.ReportMetric(float64(install.Total)/installs, "req/install")
	b.ReportMetric(float64(install.Writes)/installs, "writes/install")
	b.ReportMetric(float64(noop.Total)/installs, "noop-req/install")
	b.ReportMetric(float64(noop.Writes)/installs, "noop-writes/install")
	b.ReportMetric(float64(diff.Total)/installs, "diff-req/install")
	b.ReportMetric(float64(diff.Writes)/installs, "diff-writes/install")
	b.ReportMetric(float64(uninstall.Total)/installs, "delete-req/install")
	b.Logf("N=%d requests by method: install %v, no-change apply %v, diff %v, delete %v",
		n, install.ByMethod, noop.ByMethod, diff.ByMethod, uninstall.ByMethod)
}

// waitReady reads the health of every inventory not ready yet (ready says
// which are, from the apply's answers), again and again, until all are
// ready; it fails after a minute.
func waitReady(ctx context.Context, a *apply.Applier, inventories [][]v1alpha1.ObjectReference, ready []bool) error {
	deadline := time.Now().Add(time.Minute)
	for {
		var mu sync.Mutex
		pending := 0
		if err := parallel(len(inventories), func(i int) error {
			if ready[i] {
				return nil
			}
			h, err := a.Health(ctx, inventories[i])
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			ready[i] = h.Ready
			if !h.Ready {
				pending++
			}
			return nil
		}); err != nil {
			return err
		}
		if pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d installations not ready after a minute", pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deleteAll calls Delete for every installation until each reports
// nothing remaining; it fails after a minute.
func deleteAll(ctx context.Context, a *apply.Applier, owners []apply.Owner, inventories [][]v1alpha1.ObjectReference) error {
	gone := make([]bool, len(owners))
	deadline := time.Now().Add(time.Minute)
	for {
		var mu sync.Mutex
		left := 0
		if err := parallel(len(owners), func(i int) error {
			if gone[i] {
				return nil
			}
			remaining, err := a.Delete(ctx, owners[i], inventories[i], false)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			gone[i] = remaining == 0
			if remaining > 0 {
				left++
			}
			return nil
		}); err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d installations not deleted after a minute", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func addCounts(x, y reqcount.Counts) reqcount.Counts {
	out := reqcount.Counts{ByMethod: map[string]int{}, Total: x.Total + y.Total, Writes: x.Writes + y.Writes}
	for _, m := range []map[string]int{x.ByMethod, y.ByMethod} {
		for k, v := range m {
			out.ByMethod[k] += v
		}
	}
	return out
}
