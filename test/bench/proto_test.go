package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply/reqcount"
	installctl "github.com/annex-platform/annex/internal/controller/installation"
	revrecord "github.com/annex-platform/annex/internal/record"
	"github.com/annex-platform/annex/internal/testenv"
)

// benchProtocol measures the floor under Annex: a plain client without a
// manager sends, for each app, the requests Annex's install and uninstall
// send (the benchmark's annex run lists them), with bodies of the same
// shape, working on as many apps at once as the manager reconciles
// installations. What Annex takes beyond this is the manager's own work;
// what this takes beyond raw is the API server's price for the
// installation resource, its finalizer, the revision record, server-side
// apply, the status and the events.
func benchProtocol(b *testing.B, n int) {
	if b.N > 1 {
		b.Fatal("run with -benchtime 1x: one run takes minutes and starts its own API server")
	}
	ctx := b.Context()
	env := testenv.Start(b)
	counter := &reqcount.Counter{}
	c, err := client.New(counter.Wrap(unlimited(env.Config)), client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	createNamespace(b, env.Client, benchNamespace)
	warmUp(b, c)

	before, apiBefore := counter.Snapshot(), controlPlaneCPU(b)
	b.ResetTimer()
	start := time.Now()
	if err := parallelOn(installctl.DefaultWorkers, n, func(i int) error { return protocolInstall(ctx, c, i) }); err != nil {
		b.Fatal(err)
	}
	toReady := time.Since(start)
	b.StopTimer()
	install, apiInstall := counter.Snapshot().Sub(before), controlPlaneCPU(b)-apiBefore

	before, apiBefore = counter.Snapshot(), controlPlaneCPU(b)
	b.StartTimer()
	start = time.Now()
	if err := parallelOn(installctl.DefaultWorkers, n, func(i int) error { return protocolUninstall(ctx, c, i) }); err != nil {
		b.Fatal(err)
	}
	toDelete := time.Since(start)
	b.StopTimer()
	uninstall, apiDelete := counter.Snapshot().Sub(before), controlPlaneCPU(b)-apiBefore
	requireNoApps(b, env.Client)

	r := result{
		toReady: toReady, toDelete: toDelete,
		reqPerInstall: float64(install.Total) / float64(n), writesPerInstall: float64(install.Writes) / float64(n),
		reqPerDelete: float64(uninstall.Total) / float64(n),
		apiInstall:   apiInstall / time.Duration(n), apiDelete: apiDelete / time.Duration(n),
		idleWritesPerHour: -1, load: loadavg(),
	}
	report(b, n, "proto", r)
}

// warmUp does before the clock starts what the annex run has done by then:
// the manager has learnt the API's kinds, and the API server's first write
// of a custom resource (the annex run's Catalog), which it holds for about
// two seconds, is behind it.
func warmUp(b *testing.B, c client.Client) {
	b.Helper()
	objs, _, err := protocolObjects(0)
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if _, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			b.Fatal(err)
		}
	}
	first := installation(-1)
	if err := c.Create(b.Context(), first); err != nil {
		b.Fatal(err)
	}
	if err := c.Delete(b.Context(), first); err != nil {
		b.Fatal(err)
	}
}

// protocolInstall sends Annex's requests for installing app i: the
// user's create (the API server adds the finalizer: policy
// annex-uninstall-finalizer), the intent record, a create of each
// object, the status as Annex writes it and the event.
func protocolInstall(ctx context.Context, c client.Client, i int) error {
	inst := installation(i)
	if err := c.Create(ctx, inst); err != nil {
		return err
	}
	if !slices.Contains(inst.Finalizers, v1alpha1.FinalizerUninstall) {
		return fmt.Errorf("installation %s was created without the finalizer %s: is policy annex-uninstall-finalizer bound?", inst.Name, v1alpha1.FinalizerUninstall)
	}
	objs, refs, err := protocolObjects(i)
	if err != nil {
		return err
	}
	data, err := revrecord.Encode(revrecord.Record{Revision: 1, Version: "1.0.0", ValuesDigest: digest('v'), ManifestDigest: digest('m'), Inventory: refs, Objects: objs})
	if err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: inst.Namespace, Name: fmt.Sprintf("annex.%s.v1", inst.Name),
			Labels:          map[string]string{"annex.dev/installation": inst.Name, "annex.dev/revision": "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation", Name: inst.Name, UID: inst.UID}},
		},
		Type: "annex.dev/revision",
		Data: map[string][]byte{"record": data.Index},
	}); err != nil {
		return err
	}
	// A first install creates its objects (ApplyOptions.Create): one
	// request each, with the validation an apply has.
	for k, o := range objs {
		if err := c.Create(ctx, o, client.FieldOwner(v1alpha1.FieldManager), client.FieldValidation("Strict")); err != nil {
			return err
		}
		refs[k].ResourceVersion = o.GetResourceVersion()
	}
	// The status Annex writes, field for field (the object's size is
	// what the API server's work on it follows).
	base := inst.DeepCopy()
	now := metav1.Now()
	complete := v1alpha1.PlanComplete
	inst.Status = v1alpha1.ExtensionInstallationStatus{
		ObservedGeneration: inst.Generation, ClusterVersion: "v1.37.1", ResolvedVersion: "1.0.0", InstalledVersion: "1.0.0",
		Artifact:  &v1alpha1.ArtifactStatus{Version: "1.0.0", URL: "http://127.0.0.1:33875/flux-benchmark-1.0.0.tgz", Digest: digest('a')},
		Inventory: refs, InventoryCount: int32(len(refs)), LastHealthyRevision: 1,
		History: []v1alpha1.Revision{{Number: 1, Version: "1.0.0", ArtifactDigest: digest('a'), ValuesDigest: digest('v'), ManifestDigest: digest('m'), AppliedAt: now}},
		Plans: []v1alpha1.PlanStatus{{Name: "install", State: complete, Trigger: "install", Revision: 1, StartedAt: &now, FinishedAt: &now,
			Phases: []v1alpha1.PhaseStatus{{Name: "apply", State: complete, Steps: []v1alpha1.StepStatus{
				{Name: "ServiceAccounts and RBAC", State: complete}, {Name: "objects", State: complete}}}}}},
		Content:     &v1alpha1.ContentScope{Version: "1.0.0", ObservedGeneration: inst.Generation},
		Permissions: &v1alpha1.PermissionSummary{},
	}
	for _, cond := range []struct{ typ, msg string }{
		{v1alpha1.ConditionResolved, "chose flux-benchmark 1.0.0 for Kubernetes v1.37.1"},
		{v1alpha1.ConditionInstalled, "applied flux-benchmark 1.0.0 (revision 1, 4 objects)"},
		{v1alpha1.ConditionReady, "flux-benchmark 1.0.0 is installed and healthy (4 objects)"},
	} {
		meta.SetStatusCondition(&inst.Status.Conditions, metav1.Condition{Type: cond.typ, Status: metav1.ConditionTrue,
			Reason: v1alpha1.ReasonSucceeded, Message: cond.msg, ObservedGeneration: inst.Generation})
	}
	if err := c.Status().Patch(ctx, inst, client.MergeFrom(base)); err != nil {
		return err
	}
	return c.Create(ctx, protocolEvent(inst, "Installed", "installed flux-benchmark 1.0.0 (revision 1)"))
}

// protocolUninstall sends Annex's requests for uninstalling app i: the
// user's delete, a delete of each object (by resourceVersion for kinds
// no controller writes back, by selection of its name and Annex's labels
// for the others), a list of the namespace's Pods before the
// ServiceAccount goes, the list and delete of the record, the event and
// the finalizer's removal.
func protocolUninstall(ctx context.Context, c client.Client, i int) error {
	inst := installation(i)
	if err := c.Delete(ctx, inst); err != nil {
		return err
	}
	objs, _, err := protocolObjects(i)
	if err != nil {
		return err
	}
	slices.SortStableFunc(objs, func(x, y *unstructured.Unstructured) int {
		return cmp.Compare(boolInt(x.GetKind() == "ServiceAccount"), boolInt(y.GetKind() == "ServiceAccount"))
	})
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount":
			// RBAC goes once the workloads' Pods are gone.
			if err := c.List(ctx, &corev1.PodList{}, client.InNamespace(o.GetNamespace())); err != nil {
				return err
			}
			fallthrough
		case "Service":
			// Annex deletes these unread, on condition of the
			// resourceVersion it applied them at (the inventory's).
			if err := c.Delete(ctx, o); err != nil {
				return err
			}
			continue
		}
		if err := c.DeleteAllOf(ctx, o, client.InNamespace(o.GetNamespace()), client.MatchingLabels(o.GetLabels()),
			client.MatchingFields{"metadata.name": o.GetName()}, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			return err
		}
	}
	var records corev1.SecretList
	if err := c.List(ctx, &records, client.InNamespace(inst.Namespace), client.MatchingLabels{"annex.dev/installation": inst.Name}); err != nil {
		return err
	}
	for k := range records.Items {
		if err := c.Delete(ctx, &records.Items[k]); err != nil {
			return err
		}
	}
	if err := c.Create(ctx, protocolEvent(inst, "Uninstalled", "uninstalled flux-benchmark 1.0.0")); err != nil {
		return err
	}
	return c.Patch(ctx, inst, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
}

// protocolObjects are app i's objects as Annex applies them: unstructured,
// with Annex's labels, and their inventory.
func protocolObjects(i int) ([]*unstructured.Unstructured, []v1alpha1.ObjectReference, error) {
	var objs []*unstructured.Unstructured
	var refs []v1alpha1.ObjectReference
	for _, o := range appObjects(benchNamespace, i) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		labels := u.GetLabels()
		labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByValue
		labels[v1alpha1.LabelInstallationName] = u.GetName()
		labels[v1alpha1.LabelInstallationNamespace] = benchNamespace
		u.SetLabels(labels)
		gvk := u.GroupVersionKind()
		objs = append(objs, u)
		refs = append(refs, v1alpha1.ObjectReference{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()})
	}
	return objs, refs, nil
}

func protocolEvent(inst *v1alpha1.ExtensionInstallation, reason, msg string) *corev1.Event {
	now := metav1.Now()
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: inst.Namespace, GenerateName: inst.Name + "."},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation",
			Namespace: inst.Namespace, Name: inst.Name, UID: inst.UID},
		Reason: reason, Message: msg, Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "annex"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
}

// digest is the text of a sha256 digest, made of c.
func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
