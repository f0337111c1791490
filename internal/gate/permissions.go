// Package gate decides what must agree before a plan touches a cluster.
// This file derives, from an extension's rendered objects alone, what the
// extension will be able to do once they are applied, and how that
// differs from what the installed revision could do. It is pure: objects
// in, values out.
package gate

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// Permissions is what an extension's objects let it do.
type Permissions struct {
	// Grants are what its RoleBindings and ClusterRoleBindings give their
	// subjects, sorted by namespace ("" first), subject and binding.
	Grants []Grant `json:"grants,omitempty"`
	// Aggregations are its ClusterRoles that add their rules to other
	// ClusterRoles by label (aggregate-to-admin, -edit, -view and the
	// like): whoever is bound to those gets the rules too.
	Aggregations []Aggregation `json:"aggregations,omitempty"`
	// ClusterScoped lists the cluster-scoped objects it creates, as
	// "Kind name", sorted: CustomResourceDefinitions, webhook
	// configurations, APIServices, ClusterRoles, Namespaces....
	ClusterScoped []string `json:"clusterScoped,omitempty"`
	// Namespaces are the namespaces other than its own that it writes
	// objects into, sorted.
	Namespaces []string `json:"namespaces,omitempty"`
}

// Grant is the access one binding gives one subject.
type Grant struct {
	// Subject is "ServiceAccount <namespace>/<name>", "User <name>" or
	// "Group <name>".
	Subject string `json:"subject"`
	// Namespace is where the grant holds; "" means cluster-wide (a
	// ClusterRoleBinding).
	Namespace string `json:"namespace,omitempty"`
	// Binding and Role are "<Kind>/<name>" of the binding and its role.
	Binding string `json:"binding"`
	Role    string `json:"role"`
	// Rules are the role's rules, with those of the ClusterRoles of the
	// extension it aggregates; nil with External set when the role is not
	// among the extension's objects (a built-in such as cluster-admin, or
	// one made elsewhere), whose rules only the cluster knows.
	Rules    []rbacv1.PolicyRule `json:"rules,omitempty"`
	External bool                `json:"external,omitempty"`
}

// Aggregation is a ClusterRole whose rules flow into the ClusterRoles
// that select its labels.
type Aggregation struct {
	// Role is "ClusterRole/<name>".
	Role string `json:"role"`
	// Into lists the labels by which it is aggregated, e.g.
	// rbac.authorization.k8s.io/aggregate-to-admin=true.
	Into  []string            `json:"into"`
	Rules []rbacv1.PolicyRule `json:"rules,omitempty"`
}

// Derive computes the Permissions of objs, an extension's rendered
// objects, for an installation whose namespaced objects without a
// namespace go into ownNamespace. Roles and bindings that do not decode
// count as absent.
func Derive(objs []*unstructured.Unstructured, ownNamespace string) Permissions {
	var p Permissions
	roles := map[string][]rbacv1.PolicyRule{}
	var clusterRoles []*unstructured.Unstructured
	namespaces := map[string]bool{}
	for _, o := range objs {
		ns := o.GetNamespace()
		switch o.GetKind() {
		case "Role":
			roles[roleKey("Role", cmp.Or(ns, ownNamespace), o.GetName())] = decodeRules(o)
		case "ClusterRole":
			roles[roleKey("ClusterRole", "", o.GetName())] = decodeRules(o)
			clusterRoles = append(clusterRoles, o)
		}
		if ns != "" && ns != ownNamespace {
			namespaces[ns] = true
		}
		if ns == "" && clusterScoped(o) {
			p.ClusterScoped = append(p.ClusterScoped, o.GetKind()+" "+o.GetName())
		}
	}
	aggregate(clusterRoles, roles)
	p.Aggregations = aggregations(clusterRoles, roles)
	for _, o := range objs {
		kind := o.GetKind()
		if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding // a ClusterRoleBinding has the same roleRef and subjects
		if decode(o.Object, &b) != nil {
			continue
		}
		ns := ""
		if kind == "RoleBinding" {
			ns = cmp.Or(o.GetNamespace(), ownNamespace)
		}
		roleNs := ns
		if b.RoleRef.Kind == "ClusterRole" {
			roleNs = ""
		}
		rules, found := roles[roleKey(b.RoleRef.Kind, roleNs, b.RoleRef.Name)]
		for _, s := range b.Subjects {
			p.Grants = append(p.Grants, Grant{
				Subject: subjectName(s, ns), Namespace: ns,
				Binding: kind + "/" + o.GetName(), Role: b.RoleRef.Kind + "/" + b.RoleRef.Name,
				Rules: rules, External: !found,
			})
		}
	}
	slices.SortStableFunc(p.Grants, func(a, b Grant) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Subject, b.Subject), cmp.Compare(a.Binding, b.Binding))
	})
	slices.Sort(p.ClusterScoped)
	p.ClusterScoped = slices.Compact(p.ClusterScoped)
	p.Namespaces = slices.Sorted(maps.Keys(namespaces))
	return p
}

// clusterScopedKinds are the built-in kinds that have no namespace. A
// custom kind is taken as namespaced unless it has no namespace and is
// one of these: Derive sees objects, not the cluster's discovery.
var clusterScopedKinds = map[string]bool{
	"CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"Namespace": true, "ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"APIService": true, "PriorityClass": true, "StorageClass": true, "IngressClass": true,
	"RuntimeClass": true, "PersistentVolume": true, "CSIDriver": true, "VolumeSnapshotClass": true,
}

func clusterScoped(o *unstructured.Unstructured) bool { return clusterScopedKinds[o.GetKind()] }

// aggregate adds to every ClusterRole with an aggregationRule the rules
// of the extension's ClusterRoles its selectors match, as the cluster's
// aggregation controller will.
func aggregate(clusterRoles []*unstructured.Unstructured, roles map[string][]rbacv1.PolicyRule) {
	for _, target := range clusterRoles {
		var cr rbacv1.ClusterRole
		if decode(target.Object, &cr) != nil || cr.AggregationRule == nil {
			continue
		}
		key := roleKey("ClusterRole", "", target.GetName())
		for _, source := range clusterRoles {
			if source == target || !matchesAny(cr.AggregationRule.ClusterRoleSelectors, source.GetLabels()) {
				continue
			}
			roles[key] = append(roles[key], decodeRules(source)...)
		}
	}
}

// aggregatingLabelPrefix starts the labels the built-in roles aggregate
// by: a ClusterRole labelled rbac.authorization.k8s.io/aggregate-to-admin
// =true gives its rules to everyone bound to admin.
const aggregatingLabelPrefix = "rbac.authorization.k8s.io/aggregate-to-"

// aggregations lists the extension's ClusterRoles labelled for the
// built-in roles' aggregation: their rules reach subjects outside the
// extension.
func aggregations(clusterRoles []*unstructured.Unstructured, roles map[string][]rbacv1.PolicyRule) []Aggregation {
	var out []Aggregation
	for _, o := range clusterRoles {
		var into []string
		for k, v := range o.GetLabels() {
			if strings.HasPrefix(k, aggregatingLabelPrefix) && v == "true" {
				into = append(into, k+"="+v)
			}
		}
		if len(into) == 0 {
			continue
		}
		slices.Sort(into)
		out = append(out, Aggregation{Role: "ClusterRole/" + o.GetName(), Into: into, Rules: roles[roleKey("ClusterRole", "", o.GetName())]})
	}
	slices.SortFunc(out, func(a, b Aggregation) int { return cmp.Compare(a.Role, b.Role) })
	return out
}

func matchesAny(selectors []metav1.LabelSelector, l map[string]string) bool {
	for _, s := range selectors {
		sel, err := metav1.LabelSelectorAsSelector(&s)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(l)) {
			return true
		}
	}
	return false
}

func subjectName(s rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return fmt.Sprintf("%s %s/%s", s.Kind, cmp.Or(s.Namespace, bindingNamespace), s.Name)
	}
	return s.Kind + " " + s.Name
}

func roleKey(kind, ns, name string) string {
	if kind == "ClusterRole" {
		ns = ""
	}
	return kind + "/" + ns + "/" + name
}

func decodeRules(o *unstructured.Unstructured) []rbacv1.PolicyRule {
	var r struct {
		Rules []rbacv1.PolicyRule `json:"rules"`
	}
	if decode(o.Object, &r) != nil {
		return nil
	}
	return r.Rules
}

func decode(data map[string]any, into any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}
