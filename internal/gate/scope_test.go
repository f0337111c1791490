package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// clusterScopes is a cluster's discovery as ScopeGrants sees it: true for
// namespaced resources, false for cluster-scoped ones, absent when not
// served.
var clusterScopes = map[schema.GroupResource]bool{
	{Resource: "pods"}: true, {Resource: "configmaps"}: true, {Resource: "secrets"}: true, {Resource: "serviceaccounts"}: true,
	{Group: "apps", Resource: "deployments"}: true, {Group: "coordination.k8s.io", Resource: "leases"}: true,
	{Resource: "nodes"}: false, {Resource: "namespaces"}: false, {Resource: "persistentvolumes"}: false,
}

func scopeOf(gr schema.GroupResource) (bool, bool) {
	ns, ok := clusterScopes[gr]
	return ns, ok
}

const (
	serviceAccount = `apiVersion: v1
kind: ServiceAccount
metadata: {name: op, namespace: ops}`
	bindOpManager = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op-manager, labels: {app: op}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-manager}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]`
)

// kindsAndNames lists objs as "Kind namespace/name", in order.
func kindsAndNames(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

func TestScopeGrants(t *testing.T) {
	cases := []struct {
		name    string
		objects string
		// objects is the scoped set as kindsAndNames lists it.
		want    []string
		changes []string
		// rules are the rules of the ClusterRoles after scoping, by name.
		rules map[string]string
	}{{
		// The common case: an operator that needs namespaced resources
		// only, bound cluster-wide. The binding becomes RoleBindings to
		// the same ClusterRole, and no ClusterRoleBinding is left.
		name: "namespaced-only role",
		objects: serviceAccount + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
rules:
- {apiGroups: [""], resources: [pods, configmaps], verbs: [get, list, watch]}
- {apiGroups: [apps], resources: [deployments, deployments/scale], verbs: ["*"]}
---
` + bindOpManager,
		want: []string{"ServiceAccount ops/op", "ClusterRole /op-manager", "RoleBinding team-a/op-manager", "RoleBinding team-b/op-manager"},
		changes: []string{
			"ClusterRoleBinding op-manager → RoleBindings in team-a, team-b (ClusterRole op-manager: configmaps, deployments.apps, deployments.apps/scale, pods)",
		},
		rules: map[string]string{
			"op-manager": `[{"verbs":["get","list","watch"],"apiGroups":[""],"resources":["pods","configmaps"]},{"verbs":["*"],"apiGroups":["apps"],"resources":["deployments","deployments/scale"]}]`,
		},
	}, {
		// Rules of both kinds: the role keeps the cluster-scoped ones and
		// stays bound cluster-wide; a rule naming both kinds is split; a
		// new role takes the namespaced rules, bound in each namespace.
		// The extension's RoleBinding to the role moves to the new one.
		name: "mixed role",
		objects: serviceAccount + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager, labels: {app: op}}
rules:
- {apiGroups: [""], resources: [pods, nodes], verbs: [get, list]}
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, update]}
- {nonResourceURLs: [/metrics], verbs: [get]}
- {apiGroups: [""], resources: [users, serviceaccounts], verbs: [impersonate]}
---
` + bindOpManager + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: op-local, namespace: ops}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-manager}
subjects: [{kind: ServiceAccount, name: op}]`,
		want: []string{"ServiceAccount ops/op", "ClusterRole /op-manager", "ClusterRole /op-manager-namespaced",
			"ClusterRoleBinding /op-manager", "RoleBinding team-a/op-manager", "RoleBinding team-b/op-manager", "RoleBinding ops/op-local"},
		changes: []string{
			"ClusterRoleBinding op-manager → RoleBindings in team-a, team-b (ClusterRole op-manager-namespaced: leases.coordination.k8s.io, pods, serviceaccounts); stays cluster-wide for ClusterRole op-manager: /metrics, nodes, users",
			"RoleBinding ops/op-local → ClusterRole op-manager-namespaced (the namespaced rules of ClusterRole op-manager)",
		},
		rules: map[string]string{
			"op-manager":            `[{"verbs":["get","list"],"apiGroups":[""],"resources":["nodes"]},{"verbs":["get"],"nonResourceURLs":["/metrics"]},{"verbs":["impersonate"],"apiGroups":[""],"resources":["users"]}]`,
			"op-manager-namespaced": `[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"]},{"verbs":["get","update"],"apiGroups":["coordination.k8s.io"],"resources":["leases"]},{"verbs":["impersonate"],"apiGroups":[""],"resources":["serviceaccounts"]}]`,
		},
	}, {
		// A binding to a role the extension does not ship: bound in each
		// namespace, cluster-admin there is that namespace's admin.
		name: "external cluster-admin",
		objects: serviceAccount + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]`,
		want: []string{"ServiceAccount ops/op", "RoleBinding team-a/op-admin", "RoleBinding team-b/op-admin"},
		changes: []string{
			"ClusterRoleBinding op-admin → RoleBindings in team-a, team-b (ClusterRole cluster-admin, not the extension's: its namespaced rules only)",
		},
	}, {
		// Nothing namespaced to narrow: the binding stays, and says so.
		name: "cluster-scoped only",
		objects: `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
rules:
- {apiGroups: [""], resources: [nodes, persistentvolumes], verbs: [get]}
---
` + bindOpManager,
		want: []string{"ClusterRole /op-manager", "ClusterRoleBinding /op-manager"},
		changes: []string{
			"ClusterRoleBinding op-manager stays cluster-wide: ClusterRole op-manager grants cluster-scoped resources only (nodes, persistentvolumes)",
		},
	}, {
		// The extension's own CRD tells the scope of a kind the cluster
		// does not serve yet.
		name: "scope from the extension's CRD",
		objects: `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, scope: Namespaced, names: {plural: widgets, kind: Widget}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
rules:
- {apiGroups: [example.com], resources: [widgets, widgets/status], verbs: [get, update]}
---
` + bindOpManager,
		want: []string{"CustomResourceDefinition /widgets.example.com", "ClusterRole /op-manager", "RoleBinding team-a/op-manager", "RoleBinding team-b/op-manager"},
		changes: []string{
			"ClusterRoleBinding op-manager → RoleBindings in team-a, team-b (ClusterRole op-manager: widgets.example.com, widgets.example.com/status)",
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := objects(t, tc.objects)
			before := deepCopies(in)
			got, err := ScopeGrants(in, []string{"team-b", "team-a", "team-b"}, scopeOf)
			if err != nil {
				t.Fatal(err)
			}
			if names := kindsAndNames(got.Objects); !slices.Equal(names, tc.want) {
				t.Errorf("objects:\n got %q\nwant %q", names, tc.want)
			}
			if !slices.Equal(got.Changes, tc.changes) {
				t.Errorf("changes:\n got %q\nwant %q", got.Changes, tc.changes)
			}
			for _, o := range got.Objects {
				want, ok := tc.rules[o.GetName()]
				if o.GetKind() != "ClusterRole" || !ok {
					continue
				}
				if rules := rulesJSON(t, o); rules != want {
					t.Errorf("ClusterRole %s rules:\n got %s\nwant %s", o.GetName(), rules, want)
				}
			}
			for _, o := range got.Objects {
				if o.GetKind() == "RoleBinding" && strings.HasPrefix(o.GetNamespace(), "team-") {
					if ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind"); ref != "ClusterRole" {
						t.Errorf("RoleBinding %s/%s binds a %s", o.GetNamespace(), o.GetName(), ref)
					}
				}
			}
			if extra := Escalations(in, got.Objects); len(extra) > 0 {
				t.Errorf("scoping grew the grants: %v", extra)
			}
			if !equality.Semantic.DeepEqual(in, before) {
				t.Error("ScopeGrants modified its input")
			}
			again, err := ScopeGrants(in, []string{"team-a", "team-b"}, scopeOf)
			if err != nil || !equality.Semantic.DeepEqual(again.Objects, got.Objects) || !slices.Equal(again.Changes, got.Changes) {
				t.Errorf("not deterministic: %v", err)
			}
		})
	}
}

// What cannot be narrowed soundly is refused, naming the object and the
// rule.
func TestScopeGrantsRefusals(t *testing.T) {
	role := func(rules string) string {
		return `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
rules:
` + rules + "\n---\n" + bindOpManager
	}
	cases := []struct {
		name    string
		objects string
		want    string
	}{{
		// "*" in apiGroups covers groups of both scopes.
		name:    "wildcard group",
		objects: role(`- {apiGroups: ["*"], resources: [pods], verbs: [get]}`),
		want:    `ClusterRole op-manager rules[0]: apiGroups "*" cannot be told namespaced or cluster-scoped; list the groups`,
	}, {
		// "*" in resources covers resources of both scopes.
		name:    "wildcard resource",
		objects: role(`- {apiGroups: [""], resources: [pods], verbs: [get]}` + "\n" + `- {apiGroups: [apps], resources: ["*/scale"], verbs: [get]}`),
		want:    `ClusterRole op-manager rules[1]: resources "*/scale" cannot be told namespaced or cluster-scoped; list the resources`,
	}, {
		// A resource neither the cluster nor the extension defines.
		name:    "unknown scope",
		objects: role(`- {apiGroups: [example.com], resources: [gadgets], verbs: [get]}`),
		want:    `ClusterRole op-manager rules[0]: the cluster does not serve gadgets.example.com and no CustomResourceDefinition of the extension defines it, so its scope is unknown`,
	}, {
		// The cluster assembles an aggregated role's rules at any time.
		name: "aggregated role",
		objects: `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {example.com/aggregate-to-op: "true"}}]
---
` + bindOpManager,
		want: "ClusterRole op-manager: has an aggregationRule: the cluster assembles its rules from other ClusterRoles, so they cannot be told namespaced or cluster-scoped; bind the aggregated roles instead",
	}, {
		// The RoleBinding the binding would become exists already.
		name: "name taken",
		objects: role(`- {apiGroups: [""], resources: [pods], verbs: [get]}`) + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: op-manager, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]`,
		want: "ClusterRoleBinding op-manager: it would become RoleBinding team-a/op-manager, which the extension has already",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ScopeGrants(objects(t, tc.objects), []string{"team-a"}, scopeOf)
			var scopeErr *ScopeError
			if !errors.As(err, &scopeErr) || err.Error() != tc.want {
				t.Fatalf("got %v\nwant ScopeError %s", err, tc.want)
			}
		})
	}
}

// Escalations finds what the objects after grant beyond those before: a
// namespace's access is covered by the same access cluster-wide, not the
// other way round.
func TestEscalations(t *testing.T) {
	scoped, err := ScopeGrants(objects(t, operatorChartScopable), []string{"team-a"}, scopeOf)
	if err != nil {
		t.Fatal(err)
	}
	if extra := Escalations(objects(t, operatorChartScopable), scoped.Objects); len(extra) > 0 {
		t.Errorf("scoped grants are covered by the original ones, got %v", extra)
	}
	got := describeAccesses(Escalations(scoped.Objects, objects(t, operatorChartScopable)))
	want := []string{"bound to ClusterRole/cluster-admin cluster-wide", "get, list, watch on configmaps cluster-wide"}
	if !slices.Equal(got, want) {
		t.Errorf("unscoping grows:\n got %q\nwant %q", got, want)
	}
}

// Rewrite scopes a plan's tasks one at a time, with roles looked up over
// the whole plan: the role in one task, its binding in another.
func TestScopingRewrite(t *testing.T) {
	all := objects(t, operatorChartScopable)
	scoped, err := ScopeGrants(all, []string{"team-a"}, scopeOf)
	if err != nil {
		t.Fatal(err)
	}
	rbacTask, bindTask := all[:2], all[2:]
	got := slices.Concat(scoped.Rewrite(rbacTask), scoped.Rewrite(bindTask))
	if !equality.Semantic.DeepEqual(got, scoped.Objects) {
		t.Errorf("rewriting tasks: got %q, want %q", kindsAndNames(got), kindsAndNames(scoped.Objects))
	}
}

const operatorChartScopable = serviceAccount + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
---
` + bindOpManager + `
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]`

func deepCopies(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopy()
	}
	return out
}

func rulesJSON(t *testing.T, o *unstructured.Unstructured) string {
	t.Helper()
	raw, err := json.Marshal(decodeRules(o))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// Property: over random roles and bindings, scoping either refuses with
// a ScopeError or grants nothing new, and leaves no ClusterRoleBinding to
// a role with a rule on a namespaced resource.
func TestScopeGrantsNeverEscalates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for i := range 500 {
		var docs []string
		roles := []string{"cluster-admin"}
		for r := range 1 + rng.IntN(3) {
			name := fmt.Sprintf("role-%d", r)
			roles = append(roles, name)
			var rules []string
			for range 1 + rng.IntN(3) {
				if rng.IntN(5) == 0 {
					rules = append(rules, `{nonResourceURLs: [/healthz], verbs: [get]}`)
					continue
				}
				rules = append(rules, fmt.Sprintf(`{apiGroups: [%q], resources: [%s, %s], verbs: [%s]}`,
					pick("", "apps"), pick("pods", "nodes", "pods/log", "namespaces", "configmaps"),
					pick("deployments", "secrets", "persistentvolumes"), pick("get", "list", "delete")))
			}
			docs = append(docs, fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: %s}\nrules: [%s]",
				name, strings.Join(rules, ", ")))
		}
		for b := range 1 + rng.IntN(3) {
			kind, ns := "ClusterRoleBinding", ""
			if rng.IntN(3) == 0 {
				kind, ns = "RoleBinding", "ops"
			}
			docs = append(docs, fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: %s
metadata: {name: binding-%d, namespace: %q}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]`, kind, b, ns, pick(roles...)))
		}
		in := objects(t, strings.Join(docs, "\n---\n"))
		got, err := ScopeGrants(in, []string{"team-a", "team-b"}, scopeOf)
		var scopeErr *ScopeError
		switch {
		case errors.As(err, &scopeErr):
			continue
		case err != nil:
			t.Fatalf("case %d: %v\n%s", i, err, strings.Join(docs, "\n---\n"))
		}
		if extra := Escalations(in, got.Objects); len(extra) > 0 {
			t.Fatalf("case %d grows: %v", i, extra)
		}
		rules := map[string][]rbacv1.PolicyRule{}
		for _, o := range got.Objects {
			if o.GetKind() == "ClusterRole" {
				rules[o.GetName()] = decodeRules(o)
			}
		}
		for _, o := range got.Objects {
			if o.GetKind() != "ClusterRoleBinding" {
				continue
			}
			role, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
			for _, r := range rules[role] {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						base, _, _ := strings.Cut(res, "/")
						if ns, _ := scopeOf(schema.GroupResource{Group: g, Resource: base}); ns {
							t.Fatalf("case %d: ClusterRoleBinding %s still grants %s cluster-wide", i, o.GetName(), res)
						}
					}
				}
			}
		}
	}
}
