package apply

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// jobDoc is a Job whose pod template runs image with GREETING=greeting.
// Its CPU request is the number 1, which the server stores as the string
// "1": a difference only the server's normalisation removes.
func jobDoc(ns, image, greeting string) string {
	return fmt.Sprintf(`
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: %s}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: run
        image: %q
        env: [{name: GREETING, value: %q}]
        resources: {requests: {cpu: 1}}`, ns, image, greeting)
}

// A Job's pod template cannot change: applying a new one replaces the Job
// of the same installation, and only when the template really changed.
func TestApplyReplacesJob(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "job-replace"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}
	jobRef := ref("batch", "v1", "Job", ns, "migrate")
	apply := func(doc string) error {
		_, err := a.Apply(ctx, owner, ns, Set{Objects: objects(t, doc)})
		return err
	}

	if err := apply(jobDoc(ns, "registry.example/migrate:1.0", "hello")); err != nil {
		t.Fatal(err)
	}
	first := read(t, a, jobRef)

	// The same Job again: nothing changes, although `cpu: 1` is "1" live.
	if err := apply(jobDoc(ns, "registry.example/migrate:1.0", "hello")); err != nil {
		t.Fatalf("re-apply of the same Job: %v", err)
	}
	if got := read(t, a, jobRef); got.GetUID() != first.GetUID() || got.GetResourceVersion() != first.GetResourceVersion() {
		t.Errorf("re-applying an unchanged Job changed it (uid %s -> %s, resourceVersion %s -> %s)",
			first.GetUID(), got.GetUID(), first.GetResourceVersion(), got.GetResourceVersion())
	}

	for _, tc := range []struct{ name, image, greeting string }{
		{"env changed", "registry.example/migrate:1.0", "bonjour"},
		{"image changed", "registry.example/migrate:2.0", "bonjour"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := read(t, a, jobRef)
			if err := apply(jobDoc(ns, tc.image, tc.greeting)); err != nil {
				t.Fatalf("apply of a changed pod template: %v", err)
			}
			got := read(t, a, jobRef)
			if got.GetUID() == before.GetUID() {
				t.Fatalf("the Job was not replaced (same uid %s)", got.GetUID())
			}
			c := firstContainer(t, got)
			env, _, _ := unstructured.NestedSlice(c, "env")
			if c["image"] != tc.image || len(env) != 1 || env[0].(map[string]any)["value"] != tc.greeting {
				t.Errorf("live container = %v, want image %s and GREETING=%s", c, tc.image, tc.greeting)
			}
			if !owner.owns(got) {
				t.Errorf("the new Job is not labelled for %s: %v", owner, got.GetLabels())
			}
		})
	}
}

// A Job of another installation, or of none, is never replaced: applying
// a new template fails as it did before.
func TestApplyDoesNotReplaceJobsOfOthers(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "job-others"
	createNamespace(t, a, ns)
	jobRef := ref("batch", "v1", "Job", ns, "migrate")
	changed := objects(t, jobDoc(ns, "registry.example/migrate:2.0", "bonjour"))

	// Another installation's Job: refused as an ownership conflict.
	other := Owner{Name: "other", Namespace: "team-b"}
	if _, err := a.Apply(ctx, other, ns, Set{Objects: objects(t, jobDoc(ns, "registry.example/migrate:1.0", "hello"))}); err != nil {
		t.Fatal(err)
	}
	before := read(t, a, jobRef)
	_, err := a.Apply(ctx, Owner{Name: "demo", Namespace: "team-a"}, ns, Set{Objects: changed})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || conflict.Installation != other.String() {
		t.Fatalf("apply over another installation's Job: error %v, want a *ConflictError naming %s", err, other)
	}
	if got := read(t, a, jobRef); got.GetUID() != before.GetUID() {
		t.Errorf("another installation's Job was replaced")
	}

	// A Job without labels, taken over: the server refuses the template.
	if err := a.Client.Delete(ctx, before, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	unlabelled := mustObject(t, jobDoc(ns, "registry.example/migrate:1.0", "hello"))
	if err := a.Client.Create(ctx, unlabelled, client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	_, err = a.ApplyWithOptions(ctx, Owner{Name: "demo", Namespace: "team-a"}, ns,
		Set{Objects: changed}, ApplyOptions{TakeOwnership: true})
	if !isTemplateImmutableError(err) {
		t.Errorf("taking over an unlabelled Job with a new template: error %v, want the server's refusal of spec.template", err)
	}
	if got := read(t, a, jobRef); got.GetUID() != unlabelled.GetUID() {
		t.Errorf("an unlabelled Job was replaced")
	}
}

func firstContainer(t *testing.T, job *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("Job %s has no containers", job.GetName())
	}
	return cs[0].(map[string]any)
}

func TestChangedJobFields(t *testing.T) {
	// live is a Job as the server stores it.
	live := mustObject(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  completions: 1
  selector: {matchLabels: {batch.kubernetes.io/controller-uid: u1}}
  template:
    metadata: {labels: {batch.kubernetes.io/controller-uid: u1, batch.kubernetes.io/job-name: migrate, controller-uid: u1, job-name: migrate, app: m}}
    spec: {containers: [{name: run, image: a}]}`)
	cases := []struct {
		name string
		// edit changes a copy of live into the wanted Job.
		edit func(spec map[string]any)
		want []string
	}{
		{"generated labels and selector differ",
			func(spec map[string]any) {
				spec["selector"] = map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "u2"}}
				labels := spec["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)
				labels["batch.kubernetes.io/controller-uid"], labels["controller-uid"] = "u2", "u2"
				labels["batch.kubernetes.io/job-name"], labels["job-name"] = "annex-dry-run-x", "annex-dry-run-x"
			}, nil},
		{"mutable field differs",
			func(spec map[string]any) { spec["parallelism"] = int64(3) }, nil},
		{"image differs",
			func(spec map[string]any) {
				spec["template"].(map[string]any)["spec"] = map[string]any{"containers": []any{map[string]any{"name": "run", "image": "b"}}}
			}, []string{".spec.template"}},
		{"completions of a NonIndexed Job",
			func(spec map[string]any) { spec["completions"] = int64(2) }, []string{".spec.completions"}},
		{"completions of an Indexed Job may change",
			func(spec map[string]any) { spec["completions"], spec["completionMode"] = int64(2), "Indexed" },
			[]string{".spec.completionMode"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := live.DeepCopy()
			tc.edit(want.Object["spec"].(map[string]any))
			if got := changedJobFields(want, live); !slices.Equal(got, tc.want) {
				t.Errorf("changedJobFields = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTouchesImmutableJobField(t *testing.T) {
	for path, want := range map[string]bool{
		".spec.template": true,
		`.spec.template.spec.containers[name="run"]`: true,
		".spec.selector.matchLabels":                 true,
		".spec.completions":                          true,
		".spec.completionsX":                         false,
		".spec.parallelism":                          false,
		".metadata.labels.app":                       false,
		".metadata.managedFields":                    false,
	} {
		if got := touchesImmutableJobField(path); got != want {
			t.Errorf("touchesImmutableJobField(%q) = %v, want %v", path, got, want)
		}
	}
}
