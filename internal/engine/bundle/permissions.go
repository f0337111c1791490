package bundle

import (
	"cmp"
	"encoding/json"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/internal/plan"
)

// Grant is the access one binding of a plan gives one subject.
type Grant struct {
	// Subject is "<Kind> <namespace>/<name>" (ServiceAccount, User or
	// Group; users and groups have no namespace).
	Subject string `json:"subject"`
	// Namespace is where the grant holds; "" means cluster-wide (a
	// ClusterRoleBinding).
	Namespace string `json:"namespace,omitempty"`
	// Binding and Role are "<Kind>/<name>" of the binding and its role.
	Binding string `json:"binding"`
	Role    string `json:"role"`
	// Rules are the role's rules, or nil with External set when the role
	// is not in the plan (a built-in such as "view", or one made elsewhere).
	Rules    []rbacv1.PolicyRule `json:"rules,omitempty"`
	External bool                `json:"external,omitempty"`
}

// Permissions summarises what the Apply tasks of p grant: one Grant per
// subject of every RoleBinding and ClusterRoleBinding, with the rules of
// the role it binds. It reads only p, so it covers the generated RBAC and
// the RBAC a bundle ships alike; roles nobody binds grant nothing and are
// not listed. Grants are sorted by namespace ("" first), subject, binding.
// Rules that do not decode as RBAC rules count as absent.
func Permissions(p plan.Plan) []Grant {
	objs := p.Objects(plan.TaskApply)
	roles := map[string][]rbacv1.PolicyRule{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Role", "ClusterRole":
			roles[roleKey(o.GetKind(), o.GetNamespace(), o.GetName())] = decodeRules(o)
		}
	}
	var out []Grant
	for _, o := range objs {
		kind := o.GetKind()
		if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding // same shape as a ClusterRoleBinding for roleRef and subjects
		if decode(o.Object, &b) != nil {
			continue
		}
		ns := o.GetNamespace()
		if kind == "ClusterRoleBinding" {
			ns = ""
		}
		roleNs := ns
		if b.RoleRef.Kind == "ClusterRole" {
			roleNs = ""
		}
		rules, found := roles[roleKey(b.RoleRef.Kind, roleNs, b.RoleRef.Name)]
		for _, s := range b.Subjects {
			subject := s.Kind + " " + s.Name
			if s.Kind == rbacv1.ServiceAccountKind {
				subject = s.Kind + " " + s.Namespace + "/" + s.Name
			}
			out = append(out, Grant{
				Subject: subject, Namespace: ns,
				Binding: kind + "/" + o.GetName(), Role: b.RoleRef.Kind + "/" + b.RoleRef.Name,
				Rules: rules, External: !found,
			})
		}
	}
	slices.SortStableFunc(out, func(a, b Grant) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Subject, b.Subject), cmp.Compare(a.Binding, b.Binding))
	})
	return out
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
