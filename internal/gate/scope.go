package gate

// This file narrows an extension's cluster-wide grants to listed
// namespaces (an installation's spec.scopedGrants): an extension is
// granted at the scope its installation chooses. It is pure, as Derive is:
// objects in, objects out, and never grants more than the objects it was
// given.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/internal/names"
)

// ScopeOf tells whether the cluster serves a resource (an RBAC rule's
// group and resource, without subresource) as namespaced; known is false
// when the cluster does not serve it.
type ScopeOf func(schema.GroupResource) (namespaced, known bool)

// Scoping is what ScopeGrants made of a set of objects.
type Scoping struct {
	// Objects is the scoped set: the input's objects in order, each
	// replaced one with its replacements at its place.
	Objects []*unstructured.Unstructured
	// Changes says what changed, one line per ClusterRoleBinding (and per
	// RoleBinding moved to a narrowed role), in the input's order.
	Changes []string

	replaced map[*unstructured.Unstructured][]*unstructured.Unstructured
}

// Rewrite returns objs with each object ScopeGrants replaced (the same
// pointer it was given) swapped for its replacements; other objects stay.
// It lets a caller scope a whole plan at once and rewrite each of its
// tasks. objs is not modified.
func (s Scoping) Rewrite(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if r, ok := s.replaced[o]; ok {
			out = append(out, r...)
			continue
		}
		out = append(out, o)
	}
	return out
}

// ScopeError is a grant ScopeGrants cannot narrow soundly.
type ScopeError struct {
	// Object is "<Kind> <name>" of the binding or role at fault.
	Object string
	// Rule is "rules[<i>]" when one rule is at fault.
	Rule string
	// Reason says why, and what would make it scopable.
	Reason string
}

func (e *ScopeError) Error() string {
	if e.Rule != "" {
		return fmt.Sprintf("%s %s: %s", e.Object, e.Rule, e.Reason)
	}
	return e.Object + ": " + e.Reason
}

// namespacedSuffix names the ClusterRole that takes the namespaced rules
// of a ClusterRole granting both kinds of resources.
const namespacedSuffix = "-namespaced"

// ScopeGrants narrows objs, an extension's objects, so that what their
// ClusterRoleBindings grant on namespaced resources holds in namespaces
// only:
//   - a ClusterRoleBinding to a ClusterRole of objs whose rules are all
//     on namespaced resources becomes one RoleBinding of the same name
//     per namespace, bound to the same ClusterRole;
//   - when the role also has rules on cluster-scoped resources or
//     non-resource URLs, those stay in it and stay bound cluster-wide (no
//     namespace can hold them), and a ClusterRole "<name>-namespaced" with
//     the namespaced rules (a rule naming both kinds split per resource)
//     is bound by the RoleBindings; RoleBindings of objs to the role move
//     to "<name>-namespaced", since a RoleBinding grants nothing of the
//     other rules;
//   - a ClusterRoleBinding to a ClusterRole that is not in objs (such as
//     cluster-admin or edit) becomes RoleBindings to that role: the
//     namespaced part of its rules only;
//   - a ClusterRoleBinding to a role with cluster-scoped rules only
//     stays, and is reported.
//
// scopeOf tells the scope of resources that objs' own
// CustomResourceDefinitions do not define. A *ScopeError refuses what
// cannot be narrowed soundly: a wildcard group or resource, a bound
// ClusterRole with an aggregationRule (its rules are assembled by the
// cluster), a resource whose scope is unknown, a name that collides with
// an object of objs. Any other error is a caller's bug: no namespaces,
// or a result that would have granted something objs did not. objs is not modified; the output
// shares the objects it does not change.
func ScopeGrants(objs []*unstructured.Unstructured, namespaces []string, scopeOf ScopeOf) (Scoping, error) {
	namespaces = slices.Compact(slices.Sorted(slices.Values(namespaces)))
	if len(namespaces) == 0 {
		return Scoping{}, fmt.Errorf("no namespaces to scope grants to")
	}
	sc := &scoper{
		namespaces: namespaces,
		scopeOf:    withCRDScopes(objs, scopeOf),
		roles:      map[string]*unstructured.Unstructured{},
		splits:     map[string]*split{},
		taken:      map[string]bool{},
		replaced:   map[*unstructured.Unstructured][]*unstructured.Unstructured{},
	}
	for _, o := range objs {
		if isRBAC(o, "ClusterRole") {
			sc.roles[o.GetName()] = o
		}
		sc.taken[objectKey(o.GetKind(), o.GetNamespace(), o.GetName())] = true
	}
	for _, o := range objs {
		if isRBAC(o, "ClusterRoleBinding") {
			if err := sc.scopeBinding(o); err != nil {
				return Scoping{}, err
			}
		}
	}
	if err := sc.moveRoleBindings(objs); err != nil {
		return Scoping{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(sc.splits)) {
		if err := sc.splitRole(sc.roles[name], sc.splits[name]); err != nil {
			return Scoping{}, err
		}
	}
	out := Scoping{Changes: sc.changes, replaced: sc.replaced}
	out.Objects = out.Rewrite(objs)
	if extra := Escalations(objs, out.Objects); len(extra) > 0 {
		return Scoping{}, fmt.Errorf("scoping grants would grow: %s", strings.Join(describeAccesses(extra), "; "))
	}
	return out, nil
}

// Escalations returns the accesses the objects after grant that the
// objects before do not: an access in a namespace is covered by the same
// access there or cluster-wide.
func Escalations(before, after []*unstructured.Unstructured) []Access {
	// Namespaced objects without a namespace go into the installation's
	// namespace, the same one before and after; it need not be known.
	const own = "(the installation's namespace)"
	was := Derive(before, own).Accesses()
	var out []Access
	for _, a := range Derive(after, own).Accesses() {
		wide := a
		if strings.HasPrefix(a.Scope, "namespace ") {
			wide.Scope = clusterWide
		}
		_, found := slices.BinarySearchFunc(was, a, compareAccess)
		_, foundWide := slices.BinarySearchFunc(was, wide, compareAccess)
		if !found && !foundWide {
			out = append(out, a)
		}
	}
	return out
}

type scoper struct {
	namespaces []string
	scopeOf    ScopeOf
	roles      map[string]*unstructured.Unstructured // the set's ClusterRoles by name
	splits     map[string]*split                     // bound ClusterRoles of the set, by name, as split
	taken      map[string]bool                       // objectKey of every object of the set and every one added
	replaced   map[*unstructured.Unstructured][]*unstructured.Unstructured
	changes    []string
}

// split is a ClusterRole's rules parted by the scope of what they grant.
type split struct {
	namespaced, cluster []rbacv1.PolicyRule
	// namespacedRole names the ClusterRole RoleBindings bind: the role
	// itself, or "<name>-namespaced" when it has rules of both kinds.
	namespacedRole string
}

func (p *split) mixed() bool { return len(p.namespaced) > 0 && len(p.cluster) > 0 }

// scopeBinding replaces the ClusterRoleBinding o with RoleBindings, as
// ScopeGrants says.
func (sc *scoper) scopeBinding(o *unstructured.Unstructured) error {
	what := "ClusterRoleBinding " + o.GetName()
	var b rbacv1.ClusterRoleBinding
	if err := decode(o.Object, &b); err != nil {
		return &ScopeError{Object: what, Reason: fmt.Sprintf("does not decode: %v", err)}
	}
	if b.RoleRef.Kind != "ClusterRole" {
		return &ScopeError{Object: what, Reason: fmt.Sprintf("roleRef.kind is %q, not ClusterRole", b.RoleRef.Kind)}
	}
	role, ours := sc.roles[b.RoleRef.Name]
	if !ours {
		bindings, err := sc.roleBindings(o, b.RoleRef.Name)
		if err != nil {
			return err
		}
		sc.replaced[o] = bindings
		sc.changes = append(sc.changes, fmt.Sprintf("%s → RoleBindings in %s (ClusterRole %s, not the extension's: its namespaced rules only)",
			what, strings.Join(sc.namespaces, ", "), b.RoleRef.Name))
		return nil
	}
	p, err := sc.splitOf(role)
	if err != nil {
		return err
	}
	if len(p.namespaced) == 0 {
		sc.changes = append(sc.changes, fmt.Sprintf("%s stays cluster-wide: ClusterRole %s grants cluster-scoped resources only (%s)",
			what, role.GetName(), resourceList(p.cluster)))
		return nil
	}
	bindings, err := sc.roleBindings(o, p.namespacedRole)
	if err != nil {
		return err
	}
	change := fmt.Sprintf("%s → RoleBindings in %s (ClusterRole %s: %s)",
		what, strings.Join(sc.namespaces, ", "), p.namespacedRole, resourceList(p.namespaced))
	if p.mixed() {
		bindings = append([]*unstructured.Unstructured{o}, bindings...)
		change += fmt.Sprintf("; stays cluster-wide for ClusterRole %s: %s", role.GetName(), resourceList(p.cluster))
	}
	sc.replaced[o] = bindings
	sc.changes = append(sc.changes, change)
	return nil
}

// splitOf splits role's rules once, however many bindings bind it.
func (sc *scoper) splitOf(role *unstructured.Unstructured) (*split, error) {
	if p, ok := sc.splits[role.GetName()]; ok {
		return p, nil
	}
	what := "ClusterRole " + role.GetName()
	var cr rbacv1.ClusterRole
	if err := decode(role.Object, &cr); err != nil {
		return nil, &ScopeError{Object: what, Reason: fmt.Sprintf("does not decode: %v", err)}
	}
	if cr.AggregationRule != nil {
		return nil, &ScopeError{Object: what, Reason: "has an aggregationRule: the cluster assembles its rules from other ClusterRoles, " +
			"so they cannot be told namespaced or cluster-scoped; bind the aggregated roles instead"}
	}
	p := &split{namespacedRole: role.GetName()}
	for i, r := range cr.Rules {
		ns, cl, err := sc.splitRule(r)
		if err != nil {
			return nil, &ScopeError{Object: what, Rule: fmt.Sprintf("rules[%d]", i), Reason: err.Error()}
		}
		p.namespaced = append(p.namespaced, ns...)
		p.cluster = append(p.cluster, cl...)
	}
	if p.mixed() {
		p.namespacedRole = boundedName(role.GetName(), namespacedSuffix)
		key := objectKey("ClusterRole", "", p.namespacedRole)
		if sc.taken[key] {
			return nil, &ScopeError{Object: what, Reason: fmt.Sprintf(
				"its namespaced rules would go into ClusterRole %s, which the extension has already", p.namespacedRole)}
		}
		sc.taken[key] = true
	}
	sc.splits[role.GetName()] = p
	return p, nil
}

// splitRule parts r into rules on namespaced resources and rules on
// cluster-scoped ones; a rule of one kind stays whole, a rule of both is
// split into one rule per group and kind.
func (sc *scoper) splitRule(r rbacv1.PolicyRule) (namespaced, cluster []rbacv1.PolicyRule, err error) {
	if len(r.NonResourceURLs) > 0 {
		return nil, []rbacv1.PolicyRule{r}, nil
	}
	type part struct {
		rule       rbacv1.PolicyRule
		namespaced bool
	}
	var parts []part
	count := map[bool]int{}
	for _, g := range r.APIGroups {
		if g == rbacv1.APIGroupAll {
			return nil, nil, fmt.Errorf(`apiGroups "*" cannot be told namespaced or cluster-scoped; list the groups`)
		}
		byScope := map[bool][]string{}
		for _, res := range r.Resources {
			base, _, _ := strings.Cut(res, "/")
			if base == rbacv1.ResourceAll {
				return nil, nil, fmt.Errorf(`resources %q cannot be told namespaced or cluster-scoped; list the resources`, res)
			}
			gr := schema.GroupResource{Group: g, Resource: base}
			ns, known := sc.scopeOf(gr)
			if !known {
				return nil, nil, fmt.Errorf("the cluster does not serve %s and no CustomResourceDefinition of the extension defines it, so its scope is unknown", gr)
			}
			byScope[ns] = append(byScope[ns], res)
			count[ns]++
		}
		for _, ns := range []bool{true, false} {
			if res := byScope[ns]; len(res) > 0 {
				p := *r.DeepCopy()
				p.APIGroups, p.Resources = []string{g}, res
				parts = append(parts, part{rule: p, namespaced: ns})
			}
		}
	}
	switch {
	case count[false] == 0:
		// Namespaced only, or a rule that names no resource and grants
		// nothing: whole.
		return []rbacv1.PolicyRule{r}, nil, nil
	case count[true] == 0:
		return nil, []rbacv1.PolicyRule{r}, nil
	}
	for _, p := range parts {
		if p.namespaced {
			namespaced = append(namespaced, p.rule)
		} else {
			cluster = append(cluster, p.rule)
		}
	}
	return namespaced, cluster, nil
}

// roleBindings returns, for the ClusterRoleBinding o, one RoleBinding per
// namespace with o's metadata and subjects, bound to ClusterRole role.
func (sc *scoper) roleBindings(o *unstructured.Unstructured, role string) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(sc.namespaces))
	for _, ns := range sc.namespaces {
		key := objectKey("RoleBinding", ns, o.GetName())
		if sc.taken[key] {
			return nil, &ScopeError{Object: "ClusterRoleBinding " + o.GetName(), Reason: fmt.Sprintf(
				"it would become RoleBinding %s/%s, which the extension has already", ns, o.GetName())}
		}
		sc.taken[key] = true
		rb := o.DeepCopy()
		rb.SetKind("RoleBinding")
		rb.SetNamespace(ns)
		if err := unstructured.SetNestedField(rb.Object, role, "roleRef", "name"); err != nil {
			return nil, err
		}
		out = append(out, rb)
	}
	return out, nil
}

// moveRoleBindings binds the RoleBindings of objs to a split ClusterRole
// to its namespaced part: through a RoleBinding, its other rules grant
// nothing.
func (sc *scoper) moveRoleBindings(objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if !isRBAC(o, "RoleBinding") {
			continue
		}
		var b rbacv1.RoleBinding
		if decode(o.Object, &b) != nil || b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		p, ok := sc.splits[b.RoleRef.Name]
		if !ok || !p.mixed() {
			continue
		}
		moved := o.DeepCopy()
		if err := unstructured.SetNestedField(moved.Object, p.namespacedRole, "roleRef", "name"); err != nil {
			return err
		}
		sc.replaced[o] = []*unstructured.Unstructured{moved}
		name := o.GetName()
		if o.GetNamespace() != "" {
			name = o.GetNamespace() + "/" + name
		}
		sc.changes = append(sc.changes, fmt.Sprintf("RoleBinding %s → ClusterRole %s (the namespaced rules of ClusterRole %s)",
			name, p.namespacedRole, b.RoleRef.Name))
	}
	return nil
}

// splitRole replaces a ClusterRole of both kinds of rules with itself
// holding the cluster-scoped ones and "<name>-namespaced" the others. The
// copy keeps the role's labels, so what aggregates it gets the same rules.
func (sc *scoper) splitRole(role *unstructured.Unstructured, p *split) error {
	if !p.mixed() {
		return nil
	}
	clusterPart, namespacedPart := role.DeepCopy(), role.DeepCopy()
	namespacedPart.SetName(p.namespacedRole)
	for obj, rules := range map[*unstructured.Unstructured][]rbacv1.PolicyRule{clusterPart: p.cluster, namespacedPart: p.namespaced} {
		raw, err := json.Marshal(rules)
		if err != nil {
			return err
		}
		var field []any
		if err := json.Unmarshal(raw, &field); err != nil {
			return err
		}
		obj.Object["rules"] = field
	}
	sc.replaced[role] = []*unstructured.Unstructured{clusterPart, namespacedPart}
	return nil
}

// authorizerOnly are resources RBAC rules name that no API serves: the
// authorizer checks them for impersonation and certificate signing, and
// none lives in a namespace.
var authorizerOnly = map[schema.GroupResource]bool{
	{Resource: "users"}: false, {Resource: "groups"}: false,
	{Group: "authentication.k8s.io", Resource: "userextras"}: false, {Group: "authentication.k8s.io", Resource: "uids"}: false,
	{Group: "certificates.k8s.io", Resource: "signers"}: false,
}

// withCRDScopes answers from the CustomResourceDefinitions of objs first
// (their kinds may not be served yet), then for the resources only the
// authorizer knows, then from scopeOf.
func withCRDScopes(objs []*unstructured.Unstructured, scopeOf ScopeOf) ScopeOf {
	defined := maps.Clone(authorizerOnly)
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" || o.GroupVersionKind().Group != "apiextensions.k8s.io" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(o.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		if plural != "" {
			defined[schema.GroupResource{Group: group, Resource: plural}] = scope == "Namespaced"
		}
	}
	return func(gr schema.GroupResource) (bool, bool) {
		if namespaced, ok := defined[gr]; ok {
			return namespaced, true
		}
		return scopeOf(gr)
	}
}

// resourceList is the resources rules name, sorted, for a change line.
func resourceList(rules []rbacv1.PolicyRule) string {
	var out []string
	for _, r := range rules {
		out = append(out, ruleResources(r.APIGroups, r.Resources, nil, r.NonResourceURLs)...)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ", ")
}

// boundedName is name+suffix, name shortened (names.Bounded) when the
// whole is longer than an object name may be.
func boundedName(name, suffix string) string {
	return names.Bounded(name, names.MaxSubdomain-len(suffix)) + suffix
}

func isRBAC(o *unstructured.Unstructured, kind string) bool {
	return o.GetKind() == kind && o.GroupVersionKind().Group == rbacv1.GroupName
}

func objectKey(kind, ns, name string) string { return cmp.Or(kind, "?") + "/" + ns + "/" + name }
