package gate

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func objects(t *testing.T, docs string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for doc := range strings.SplitSeq(docs, "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatalf("parse %q: %v", doc, err)
		}
		out = append(out, obj)
	}
	return out
}

// The objects of a typical operator chart: its own namespaced role, a
// cluster role aggregated from another, a binding to cluster-admin, a
// role aggregated into the built-in admin role, a CRD, and a ConfigMap
// in kube-system.
const operatorChart = `apiVersion: v1
kind: ServiceAccount
metadata: {name: op}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: op-leases}
rules:
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: op-leases}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: op-leases}
subjects: [{kind: ServiceAccount, name: op}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {example.com/aggregate-to-op: "true"}}]
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-widgets, labels: {example.com/aggregate-to-op: "true"}}
rules:
- {apiGroups: [example.com], resources: [widgets, widgets/status], verbs: [get, list, watch, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op-manager}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-manager}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: op, namespace: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-widgets-edit, labels: {rbac.authorization.k8s.io/aggregate-to-admin: "true", rbac.authorization.k8s.io/aggregate-to-edit: "true"}}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [create, delete]}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: op-settings, namespace: kube-system}`

func TestDerive(t *testing.T) {
	p := Derive(objects(t, operatorChart), "ops")

	var grants []string
	for _, g := range p.Grants {
		line := g.Subject + " " + g.Binding + " → " + g.Role + " in " + g.Namespace
		if g.External {
			line += " (external)"
		}
		grants = append(grants, line)
	}
	want := []string{
		"ServiceAccount ops/op ClusterRoleBinding/op-admin → ClusterRole/cluster-admin in  (external)",
		"ServiceAccount ops/op ClusterRoleBinding/op-manager → ClusterRole/op-manager in ",
		// A RoleBinding without a namespace lands in the installation's, and so do its subjects.
		"ServiceAccount ops/op RoleBinding/op-leases → Role/op-leases in ops",
	}
	if !slices.Equal(grants, want) {
		t.Errorf("grants:\n%s\nwant:\n%s", strings.Join(grants, "\n"), strings.Join(want, "\n"))
	}
	// The aggregated role has the rules of the role its selector matches.
	if rules := p.Grants[1].Rules; len(rules) != 1 || !slices.Equal(rules[0].Resources, []string{"widgets", "widgets/status"}) {
		t.Errorf("op-manager rules = %+v, want the aggregated widgets rule", rules)
	}
	if len(p.Aggregations) != 1 || p.Aggregations[0].Role != "ClusterRole/op-widgets-edit" ||
		!slices.Equal(p.Aggregations[0].Into, []string{"rbac.authorization.k8s.io/aggregate-to-admin=true", "rbac.authorization.k8s.io/aggregate-to-edit=true"}) {
		t.Errorf("aggregations = %+v", p.Aggregations)
	}
	wantCluster := []string{
		"ClusterRole op-manager", "ClusterRole op-widgets", "ClusterRole op-widgets-edit",
		"ClusterRoleBinding op-admin", "ClusterRoleBinding op-manager",
		"CustomResourceDefinition widgets.example.com",
	}
	if !slices.Equal(p.ClusterScoped, wantCluster) {
		t.Errorf("cluster-scoped = %v, want %v", p.ClusterScoped, wantCluster)
	}
	if !slices.Equal(p.Namespaces, []string{"kube-system"}) {
		t.Errorf("namespaces = %v, want [kube-system]", p.Namespaces)
	}
}

func TestDiff(t *testing.T) {
	installed := Derive(objects(t, operatorChart), "ops")
	// The next version reads and creates Secrets everywhere, no longer
	// binds cluster-admin, and drops the ConfigMap in kube-system.
	next := strings.Replace(operatorChart, `roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}`,
		`roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-secrets}`, 1)
	next = strings.Replace(next, `apiVersion: v1
kind: ConfigMap
metadata: {name: op-settings, namespace: kube-system}`, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-secrets}
rules:
- {apiGroups: [""], resources: [secrets], verbs: [get, create]}`, 1)
	c := Diff(installed, Derive(objects(t, next), "ops"))
	wantGrows := []string{"create, get on secrets cluster-wide", "creates ClusterRole op-secrets"}
	wantShrinks := []string{"bound to ClusterRole/cluster-admin cluster-wide", "no longer writes to namespace kube-system"}
	if !slices.Equal(c.Grows, wantGrows) || !slices.Equal(c.Shrinks, wantShrinks) {
		t.Errorf("diff:\ngrows   %q\nshrinks %q\nwant\ngrows   %q\nshrinks %q", c.Grows, c.Shrinks, wantGrows, wantShrinks)
	}
	if !Diff(installed, installed).Empty() {
		t.Error("the same permissions differ")
	}
}

func TestAccessesNameWhatTheRulesSay(t *testing.T) {
	p := Derive(objects(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r, namespace: team-a}
rules:
- {apiGroups: [""], resources: [configmaps], resourceNames: [settings], verbs: [update]}
- {apiGroups: [apps], resources: [deployments/scale], verbs: [patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: r, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects: [{kind: User, name: alice}]`), "ops")
	got := describeAccesses(p.Accesses())
	want := []string{"update on configmaps named settings namespace team-a", "patch on deployments.apps/scale namespace team-a"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize(Derive(objects(t, operatorChart), "ops"))
	want := Summary{
		ClusterWide:    []string{"get, list, update, watch on widgets.example.com", "get, list, update, watch on widgets.example.com/status"},
		Namespaces:     []string{"ops"},
		BoundTo:        []string{"ClusterRole/cluster-admin cluster-wide"},
		ClusterScoped:  6,
		AggregatesInto: []string{"rbac.authorization.k8s.io/aggregate-to-admin=true", "rbac.authorization.k8s.io/aggregate-to-edit=true"},
	}
	if !slices.Equal(s.ClusterWide, want.ClusterWide) || !slices.Equal(s.Namespaces, want.Namespaces) || !slices.Equal(s.BoundTo, want.BoundTo) ||
		s.ClusterScoped != want.ClusterScoped || !slices.Equal(s.AggregatesInto, want.AggregatesInto) {
		t.Errorf("Summarize =\n%+v\nwant\n%+v", s, want)
	}
	// status.permissions says the same.
	if st := s.Status(); !slices.Equal(st.ClusterWide, want.ClusterWide) || !slices.Equal(st.Namespaces, want.Namespaces) ||
		!slices.Equal(st.BoundTo, want.BoundTo) || st.ClusterScoped != 6 || !slices.Equal(st.AggregatesInto, want.AggregatesInto) {
		t.Errorf("Status = %+v", st)
	}
}
