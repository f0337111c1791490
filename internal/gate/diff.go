package gate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Access is one permission in flat form: a verb on a resource (or a
// non-resource URL) in a scope. Subjects are left out: what the
// extension can do is what any of its identities can do.
type Access struct {
	// Scope is "cluster-wide" or "namespace <name>".
	Scope string
	Verb  string
	// Resource is "<resource>[.<group>]", with "/<subresource>" and
	// " named <names>" as the rule says (deployments.apps/scale), or a
	// non-resource URL.
	Resource string
}

const (
	clusterWide = "cluster-wide"
	boundTo     = "bound to"
)

// Accesses flattens p into its accesses, sorted and without repeats. A
// binding to a role outside the extension is one access, verb "bound
// to" and the role as resource, since its rules are not known here.
func (p Permissions) Accesses() []Access {
	set := map[Access]bool{}
	for _, g := range p.Grants {
		scope := clusterWide
		if g.Namespace != "" {
			scope = "namespace " + g.Namespace
		}
		if g.External {
			set[Access{Scope: scope, Verb: boundTo, Resource: g.Role}] = true
			continue
		}
		for _, r := range g.Rules {
			for _, res := range ruleResources(r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs) {
				for _, v := range r.Verbs {
					set[Access{Scope: scope, Verb: v, Resource: res}] = true
				}
			}
		}
	}
	for _, a := range p.Aggregations {
		for _, r := range a.Rules {
			for _, res := range ruleResources(r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs) {
				for _, v := range r.Verbs {
					set[Access{Scope: "via " + strings.Join(a.Into, ","), Verb: v, Resource: res}] = true
				}
			}
		}
	}
	out := slices.Collect(maps.Keys(set))
	slices.SortFunc(out, compareAccess)
	return out
}

func compareAccess(a, b Access) int {
	return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
}

func ruleResources(groups, resources, names, urls []string) []string {
	var out []string
	suffix := ""
	if len(names) > 0 {
		suffix = " named " + strings.Join(names, ",")
	}
	for _, res := range resources {
		for _, g := range groups {
			name, sub, _ := strings.Cut(res, "/")
			if g != "" {
				name += "." + g
			}
			if sub != "" {
				name += "/" + sub
			}
			out = append(out, name+suffix)
		}
	}
	return append(out, urls...)
}

// Change is how permissions move from one revision to the next.
type Change struct {
	// Grows and Shrinks describe the accesses gained and lost, one line
	// per scope and resource, e.g. "create, delete on secrets
	// cluster-wide"; then the cluster-scoped objects and the namespaces
	// gained or lost.
	Grows   []string `json:"grows,omitempty"`
	Shrinks []string `json:"shrinks,omitempty"`
}

// Empty reports whether nothing changes.
func (c Change) Empty() bool { return len(c.Grows) == 0 && len(c.Shrinks) == 0 }

// Diff compares the permissions of the installed revision with those of
// the next.
func Diff(installed, next Permissions) Change {
	var c Change
	was, will := installed.Accesses(), next.Accesses()
	c.Grows = describeAccesses(minus(will, was))
	c.Shrinks = describeAccesses(minus(was, will))
	for _, o := range minusStrings(next.ClusterScoped, installed.ClusterScoped) {
		c.Grows = append(c.Grows, "creates "+o)
	}
	for _, o := range minusStrings(installed.ClusterScoped, next.ClusterScoped) {
		c.Shrinks = append(c.Shrinks, "no longer creates "+o)
	}
	for _, ns := range minusStrings(next.Namespaces, installed.Namespaces) {
		c.Grows = append(c.Grows, "writes to namespace "+ns)
	}
	for _, ns := range minusStrings(installed.Namespaces, next.Namespaces) {
		c.Shrinks = append(c.Shrinks, "no longer writes to namespace "+ns)
	}
	return c
}

func minus(a, b []Access) []Access {
	var out []Access
	for _, x := range a {
		if _, found := slices.BinarySearchFunc(b, x, compareAccess); !found {
			out = append(out, x)
		}
	}
	return out
}

func minusStrings(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// describeAccesses groups sorted accesses by scope and resource: "get,
// list on secrets cluster-wide", "bound to ClusterRole/cluster-admin
// cluster-wide".
func describeAccesses(as []Access) []string {
	var out []string
	for i := 0; i < len(as); {
		j := i
		var verbs []string
		for j < len(as) && as[j].Scope == as[i].Scope && as[j].Resource == as[i].Resource {
			verbs = append(verbs, as[j].Verb)
			j++
		}
		if verbs[0] == boundTo {
			out = append(out, fmt.Sprintf("bound to %s %s", as[i].Resource, as[i].Scope))
		} else {
			out = append(out, fmt.Sprintf("%s on %s %s", strings.Join(verbs, ", "), as[i].Resource, as[i].Scope))
		}
		i = j
	}
	return out
}

// Summary condenses Permissions for a status: what is granted
// cluster-wide in words, where namespaced grants hold, which outside
// roles are bound, how many cluster-scoped objects there are, and which
// built-in roles the extension's ClusterRoles flow into.
type Summary struct {
	// ClusterWide are the cluster-wide accesses, one line per resource
	// ("get, list, watch on pods"), at most summaryLines, then "and N
	// more".
	ClusterWide []string
	// Namespaces hold namespaced grants, sorted.
	Namespaces []string
	// BoundTo are roles outside the extension it binds, with their scope.
	BoundTo []string
	// ClusterScoped counts the cluster-scoped objects.
	ClusterScoped int
	// AggregatesInto are the labels by which its ClusterRoles flow into
	// built-in roles.
	AggregatesInto []string
}

// Status is status.permissions for s.
func (s Summary) Status() *v1alpha1.PermissionSummary {
	return &v1alpha1.PermissionSummary{
		ClusterWide: s.ClusterWide, Namespaces: s.Namespaces, BoundTo: s.BoundTo,
		ClusterScoped: int32(s.ClusterScoped), AggregatesInto: s.AggregatesInto,
	}
}

// summaryLines bounds Summary.ClusterWide.
const summaryLines = 20

// Summarize condenses p.
func Summarize(p Permissions) Summary {
	var s Summary
	var wide []Access
	namespaces := map[string]bool{}
	for _, a := range p.Accesses() {
		switch {
		case a.Verb == boundTo:
			s.BoundTo = append(s.BoundTo, a.Resource+" "+a.Scope)
		case a.Scope == clusterWide:
			wide = append(wide, a)
		case strings.HasPrefix(a.Scope, "namespace "):
			namespaces[strings.TrimPrefix(a.Scope, "namespace ")] = true
		}
	}
	lines := describeAccesses(wide)
	for i, l := range lines {
		if i == summaryLines {
			s.ClusterWide = append(s.ClusterWide, fmt.Sprintf("and %d more", len(lines)-summaryLines))
			break
		}
		s.ClusterWide = append(s.ClusterWide, strings.TrimSuffix(l, " "+clusterWide))
	}
	s.Namespaces = slices.Sorted(maps.Keys(namespaces))
	s.ClusterScoped = len(p.ClusterScoped)
	for _, a := range p.Aggregations {
		s.AggregatesInto = append(s.AggregatesInto, a.Into...)
	}
	slices.Sort(s.AggregatesInto)
	s.AggregatesInto = slices.Compact(s.AggregatesInto)
	return s
}
