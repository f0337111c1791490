package installation_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// readerChart is an operator that watches ConfigMaps and Pods: its
// ClusterRole grants namespaced resources only (plus the rules given),
// bound cluster-wide to its ServiceAccount. Its cluster-scoped objects
// are named after the release namespace, unique per test.
func readerChart(name, extraRules string) helmrepo.Chart {
	return helmrepo.Chart{Name: name, Version: "1.0.0", Files: map[string]string{
		"templates/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: reader\n",
		"templates/rbac.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .Release.Namespace }}-reader
rules:
- {apiGroups: [""], resources: [configmaps, pods], verbs: [get, list, watch]}
` + extraRules + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .Release.Namespace }}-reader
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {{ .Release.Namespace }}-reader}
subjects: [{kind: ServiceAccount, name: reader, namespace: {{ .Release.Namespace }}}]
`,
	}}
}

// Scoped grants produce RoleBindings only: the chart's ClusterRoleBinding
// becomes RoleBindings in the listed namespaces, status says so, and
// removing spec.scopedGrants gives the extension back what it asked for.
func TestScopedGrantsProduceRoleBindingsOnly(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, readerChart("scoped-reader", ""))
	teams := []string{ns + "-a", ns + "-b"}
	for _, team := range teams {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}}); err != nil {
			t.Fatal(err)
		}
	}
	inst := install(t, ns, "reader", "scoped-reader", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.ScopedGrants = &v1alpha1.ScopedGrants{Namespaces: []string{teams[1], teams[0]}}
	})
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)

	name := ns + "-reader"
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Fatalf("ClusterRoleBinding %s must not exist: %v", name, err)
	}
	if n := installationObjects(t, got, &rbacv1.ClusterRoleBindingList{}); n != 0 {
		t.Fatalf("the installation has %d ClusterRoleBindings, want none", n)
	}
	for _, team := range teams {
		rb := &rbacv1.RoleBinding{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: team, Name: name}, rb); err != nil {
			t.Fatalf("RoleBinding %s/%s: %v", team, name, err)
		}
		if rb.RoleRef.Kind != "ClusterRole" || rb.RoleRef.Name != name ||
			len(rb.Subjects) != 1 || rb.Subjects[0].Name != "reader" || rb.Subjects[0].Namespace != ns {
			t.Fatalf("RoleBinding %s/%s binds %+v to %+v", team, name, rb.RoleRef, rb.Subjects)
		}
	}
	want := []string{fmt.Sprintf("ClusterRoleBinding %s → RoleBindings in %s, %s (ClusterRole %s: configmaps, pods)", name, teams[0], teams[1], name)}
	if !slices.Equal(got.Status.ScopedGrants, want) {
		t.Fatalf("status.scopedGrants:\n got %q\nwant %q", got.Status.ScopedGrants, want)
	}

	// Opt-out: a new revision binds cluster-wide and prunes the
	// RoleBindings.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.ScopedGrants = nil
	if err := env.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	eventually(t, 60*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRoleBinding{}); err != nil {
			return err
		}
		for _, team := range teams {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: team, Name: name}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("RoleBinding %s/%s must be pruned: %v", team, name, err)
			}
		}
		return nil
	})
	if len(got.Status.ScopedGrants) != 0 || len(got.Status.History) != 2 {
		t.Fatalf("after opt-out: status.scopedGrants %q, history %+v", got.Status.ScopedGrants, got.Status.History)
	}
}

// A grant that cannot be narrowed soundly stops the installation before
// anything is applied, naming the field, the role and the rule.
func TestScopedGrantsRefusesWildcards(t *testing.T) {
	ctx := context.Background()
	ns, _ := setup(t, readerChart("scoped-wild", `- {apiGroups: ["*"], resources: [widgets], verbs: [get]}`))
	inst := install(t, ns, "reader", "scoped-wild", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.ScopedGrants = &v1alpha1.ScopedGrants{Namespaces: []string{ns}}
	})
	got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonScopedGrantsRefused)
	ready := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
	for _, part := range []string{"spec.scopedGrants", "ClusterRole " + ns + "-reader rules[1]", `apiGroups "*"`} {
		if !strings.Contains(ready.Message, part) {
			t.Fatalf("the message must name %q: %s", part, ready.Message)
		}
	}
	if len(got.Status.Inventory) != 0 {
		t.Fatalf("nothing may be applied: %v", got.Status.Inventory)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns + "-reader"}, &rbacv1.ClusterRole{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ClusterRole must not be applied: %v", err)
	}
}

// installationObjects counts the objects of list's kind that carry inst's
// labels.
func installationObjects(t *testing.T, inst *v1alpha1.ExtensionInstallation, list client.ObjectList) int {
	t.Helper()
	if err := env.Client.List(context.Background(), list, client.MatchingLabels{
		v1alpha1.LabelInstallationName: inst.Name, v1alpha1.LabelInstallationNamespace: inst.Namespace,
	}); err != nil {
		t.Fatal(err)
	}
	return meta.LenList(list)
}

// An operator bundle installed for all namespaces: its ClusterRoles mix
// namespaced resources (its custom resources, and the ConfigMaps, Leases
// and Deployments of its permissions) with cluster-scoped ones
// (TokenReviews, SubjectAccessReviews, Namespaces). The namespaced rules
// move to ClusterRoles bound in the listed namespace only; the others
// stay bound cluster-wide.
func TestScopedGrantsNarrowAnOperator(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	memcachedCatalog(t, dir, "memcached-scoped")
	olmCatalog(t, ns, dir)
	install(t, ns, "memcached", "memcached-scoped", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.ScopedGrants = &v1alpha1.ScopedGrants{Namespaces: []string{ns}}
	})
	waitPlan(t, ns, "memcached", "install", v1alpha1.PlanComplete, 1)
	got := waitCondition(t, &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "memcached"}},
		v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	// Cluster-wide: cluster-scoped resources only.
	crbs := &rbacv1.ClusterRoleBindingList{}
	installationObjects(t, got, crbs)
	for _, b := range crbs.Items {
		for _, gr := range roleResources(t, b.RoleRef.Name) {
			if namespaced(t, gr) {
				t.Errorf("ClusterRoleBinding %s grants %s cluster-wide", b.Name, gr)
			}
		}
	}
	// In the namespace: the rest, the operator's custom resources among
	// them.
	rbs := &rbacv1.RoleBindingList{}
	installationObjects(t, got, rbs)
	memcacheds := schema.GroupResource{Group: "cache.example.com", Resource: "memcacheds"}
	granted := false
	for _, b := range rbs.Items {
		if b.RoleRef.Kind != "ClusterRole" || !strings.HasSuffix(b.RoleRef.Name, "-namespaced") {
			continue
		}
		if b.Namespace != ns {
			t.Errorf("RoleBinding %s/%s is outside spec.scopedGrants", b.Namespace, b.Name)
		}
		for _, gr := range roleResources(t, b.RoleRef.Name) {
			granted = granted || gr == memcacheds
			if !namespaced(t, gr) {
				t.Errorf("ClusterRole %s holds cluster-scoped %s", b.RoleRef.Name, gr)
			}
		}
	}
	if !granted || len(crbs.Items) == 0 {
		t.Fatalf("want memcacheds granted in %s and the reviews cluster-wide; RoleBindings %d, ClusterRoleBindings %d", ns, len(rbs.Items), len(crbs.Items))
	}
	if len(got.Status.ScopedGrants) != len(crbs.Items) {
		t.Fatalf("status.scopedGrants says less than one line per binding: %q", got.Status.ScopedGrants)
	}
	for _, line := range got.Status.ScopedGrants {
		if !strings.Contains(line, "→ RoleBindings in "+ns+" (ClusterRole ") || !strings.Contains(line, "stays cluster-wide for ClusterRole") {
			t.Errorf("status.scopedGrants: %s", line)
		}
	}
}

// roleResources lists the group and resource of each rule of a
// ClusterRole, subresources left out.
func roleResources(t *testing.T, name string) []schema.GroupResource {
	t.Helper()
	role := &rbacv1.ClusterRole{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, role); err != nil {
		t.Fatal(err)
	}
	var out []schema.GroupResource
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				base, _, _ := strings.Cut(res, "/")
				out = append(out, schema.GroupResource{Group: g, Resource: base})
			}
		}
	}
	return out
}

// namespaced asks the API server's discovery whether gr is namespaced.
func namespaced(t *testing.T, gr schema.GroupResource) bool {
	t.Helper()
	mapper := env.Client.RESTMapper()
	gvk, err := mapper.KindFor(gr.WithVersion(""))
	if err != nil {
		t.Fatal(err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatal(err)
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace
}
