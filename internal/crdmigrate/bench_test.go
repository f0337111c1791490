package crdmigrate_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/apply/reqcount"
	"github.com/annex-platform/annex/internal/crdmigrate"
	"github.com/annex-platform/annex/internal/testenv"
)

// BenchmarkMigrate retires v1 of a CRD with ANNEX_MIGRATE_OBJECTS
// (default 10,000) objects stored at it, on a real API server: the time
// of one Migrate and the requests it sends per object. The objects are
// created, and the storage version moved to v2, outside the timer.
//
//	go test ./internal/crdmigrate/ -run '^$' -bench Migrate -benchtime 1x
func BenchmarkMigrate(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("ANNEX_MIGRATE_OBJECTS")); err == nil && v > 0 {
		n = v
	}
	env := testenv.Start(b)
	ctx := context.Background()
	var counter reqcount.Counter
	c, err := client.New(counter.Wrap(env.Config), client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "things"}}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		name := storedAtV1(b, c, fmt.Sprintf("bench%d", i), n)
		before := counter.Snapshot()
		b.StartTimer()
		res, err := crdmigrate.Migrate(ctx, c, name, 0)
		b.StopTimer()
		if err != nil || res.Objects != n || len(res.Trimmed) != 1 {
			b.Fatalf("Migrate = %+v, %v", res, err)
		}
		reqs := counter.Snapshot().Sub(before)
		b.ReportMetric(float64(reqs.Total)/float64(n), "requests/object")
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
}

// storedAtV1 creates a CRD of group <prefix>.migrate.test.annex.dev with n
// objects stored at v1, then moves the storage version to v2, and returns
// the CRD's name.
func storedAtV1(b *testing.B, c client.Client, prefix string, n int) string {
	ctx := context.Background()
	g := prefix + "." + group
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things." + g},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group:    g,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing", ListKind: "ThingList", Plural: "things", Singular: "thing"},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true, true)},
		},
	}
	if err := c.Create(ctx, crd); err != nil {
		b.Fatal(err)
	}
	obj := func(i int) client.Object {
		t := thing("things", fmt.Sprintf("t-%d", i), "v1")
		t.SetAPIVersion(g + "/v1")
		return t
	}
	testenv.Eventually(b, 30*time.Second, func() error { return c.Create(ctx, obj(0)) })
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := 1 + w; i < n; i += 8 {
				if err := c.Create(ctx, obj(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
		b.Fatal(err)
	}
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", false, false), version("v2", true, true)}
	if err := c.Update(ctx, crd); err != nil {
		b.Fatal(err)
	}
	return crd.Name
}
