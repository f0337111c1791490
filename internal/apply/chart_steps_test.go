package apply

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// hookDoc is a ConfigMap hook for events with weight (no weight
// annotation when weight is "").
func hookDoc(name, events, weight string) string {
	ann := fmt.Sprintf("helm.sh/hook: %q", events)
	if weight != "" {
		ann += fmt.Sprintf(", helm.sh/hook-weight: %q", weight)
	}
	return fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, annotations: {%s}}}`, name, ann)
}

// describeSteps renders steps as "name: Kind/name, Kind/name" lines.
func describeSteps(steps []Step) []string {
	var out []string
	for _, st := range steps {
		var objs []string
		for _, o := range st.Objects {
			objs = append(objs, o.GetKind()+"/"+o.GetName())
		}
		out = append(out, st.Name+": "+strings.Join(objs, ", "))
	}
	return out
}

func TestPlan(t *testing.T) {
	const group = "plan.annex.dev"
	regular := []string{
		fmt.Sprintf(`{apiVersion: %s/v1, kind: Greeting, metadata: {name: hi}}`, group),
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}`,
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: web}}`,
		`{apiVersion: v1, kind: Namespace, metadata: {name: demo}}`,
	}
	tests := []struct {
		name      string
		objects   []string
		namespace string // the release's namespace; "apps" unless set
		isUpgrade bool
		want      []string
	}{
		{
			// No hooks: the phases alone, CRDs first.
			name:    "regular objects only",
			objects: regular,
			want: []string{
				"CustomResourceDefinitions: CustomResourceDefinition/greetings.plan.annex.dev",
				"Namespaces: Namespace/demo",
				"ServiceAccounts and RBAC: ServiceAccount/web",
				"objects: Deployment/web",
				"custom resources: Greeting/hi",
			},
		},
		{
			// Pre-install hooks run after the CRDs (as Helm installs crds/
			// first) and before everything else, lowest weight first, one
			// step per weight; within a weight by phase, kind, then name.
			// Post-install hooks come last.
			name: "install hooks by weight",
			objects: append(slices.Clone(regular),
				hookDoc("late", "pre-install", "5"),
				hookDoc("b-early", "pre-install", "-1"),
				hookDoc("a-early", "pre-install", "-1"),
				`{apiVersion: batch/v1, kind: Job, metadata: {name: a-migrate, annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: "-1"}}}`,
				`{apiVersion: v1, kind: ServiceAccount, metadata: {name: z-hook-sa, annotations: {helm.sh/hook: pre-install, helm.sh/hook-weight: "-1"}}}`,
				hookDoc("unweighted", "pre-install", ""),
				hookDoc("after", "post-install", ""),
			),
			want: []string{
				"CustomResourceDefinitions: CustomResourceDefinition/greetings.plan.annex.dev",
				"pre-install hooks (weight -1): ServiceAccount/z-hook-sa, ConfigMap/a-early, ConfigMap/b-early, Job/a-migrate",
				"pre-install hooks (weight 0): ConfigMap/unweighted",
				"pre-install hooks (weight 5): ConfigMap/late",
				"Namespaces: Namespace/demo",
				"ServiceAccounts and RBAC: ServiceAccount/web",
				"objects: Deployment/web",
				"custom resources: Greeting/hi",
				"post-install hooks (weight 0): ConfigMap/after",
			},
		},
		{
			// The release's namespace (Annex creates a target namespace
			// that does not exist, as helm install --create-namespace does)
			// comes first of all, in a step of its own: before the CRDs and
			// before every hook, whichever weight the first hook has. A
			// Namespace of another name stays in the Namespaces phase, as
			// Helm applies a chart's own namespaces with the main objects.
			name:      "the release's namespace first",
			namespace: "demo",
			objects: append(slices.Clone(regular),
				`{apiVersion: v1, kind: Namespace, metadata: {name: extra}}`,
				`{apiVersion: v1, kind: ServiceAccount, metadata: {name: admission, annotations: {helm.sh/hook: "pre-install,pre-upgrade", helm.sh/hook-weight: "-10"}}}`,
				`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: admission, annotations: {helm.sh/hook: "pre-install,pre-upgrade", helm.sh/hook-weight: "-10"}}}`,
				`{apiVersion: batch/v1, kind: Job, metadata: {name: admission-create, annotations: {helm.sh/hook: "pre-install,pre-upgrade"}}}`,
			),
			want: []string{
				"target namespace: Namespace/demo",
				"CustomResourceDefinitions: CustomResourceDefinition/greetings.plan.annex.dev",
				"pre-install hooks (weight -10): Role/admission, ServiceAccount/admission",
				"pre-install hooks (weight 0): Job/admission-create",
				"Namespaces: Namespace/extra",
				"ServiceAccounts and RBAC: ServiceAccount/web",
				"objects: Deployment/web",
				"custom resources: Greeting/hi",
			},
		},
		{
			// On an upgrade too: a namespace deleted by hand is there again
			// before the first pre-upgrade hook.
			name:      "the release's namespace first on upgrade",
			namespace: "demo",
			isUpgrade: true,
			objects: []string{
				hookDoc("migrate", "pre-upgrade", "-5"),
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}`,
				`{apiVersion: v1, kind: Namespace, metadata: {name: demo}}`,
			},
			want: []string{
				"target namespace: Namespace/demo",
				"pre-upgrade hooks (weight -5): ConfigMap/migrate",
				"objects: Deployment/web",
			},
		},
		{
			// A Namespace hook is a hook like any other, even when it is
			// named like the release's namespace.
			name:      "a namespace hook stays a hook",
			namespace: "demo",
			objects: []string{
				`{apiVersion: v1, kind: Namespace, metadata: {name: demo, annotations: {helm.sh/hook: pre-install}}}`,
			},
			want: []string{"pre-install hooks (weight 0): Namespace/demo"},
		},
		{
			// An upgrade runs the upgrade hooks; install-only and delete
			// hooks are left out.
			name:      "upgrade hooks",
			isUpgrade: true,
			objects: []string{
				`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}`,
				hookDoc("install-only", "pre-install", ""),
				hookDoc("both", "pre-install,pre-upgrade", ""),
				hookDoc("after", "post-upgrade", "2"),
				hookDoc("cleanup", "pre-delete", ""),
			},
			want: []string{
				"pre-upgrade hooks (weight 0): ConfigMap/both",
				"objects: Deployment/web",
				"post-upgrade hooks (weight 2): ConfigMap/after",
			},
		},
		{
			// A hook for both pre- and post-install runs in both steps, as
			// in Helm.
			name: "hook of both pre and post",
			objects: []string{
				hookDoc("twice", "pre-install, post-install", ""),
			},
			want: []string{
				"pre-install hooks (weight 0): ConfigMap/twice",
				"post-install hooks (weight 0): ConfigMap/twice",
			},
		},
		{
			// Unknown events (Helm 2's crd-install) and a malformed weight:
			// the hook never runs; the weight would count as 0.
			name: "unknown hook event",
			objects: []string{
				hookDoc("old", "crd-install", "x"),
				hookDoc("odd-weight", "post-install", "heavy"),
			},
			want: []string{"post-install hooks (weight 0): ConfigMap/odd-weight"},
		},
		{
			// Nothing to do: no steps.
			name: "empty set",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := Set{Objects: objects(t, tt.objects...)}
			if slices.ContainsFunc(tt.objects, func(d string) bool { return strings.Contains(d, "Greeting") }) {
				set.CRDs = objects(t, crdDoc(group))
			}
			ns := tt.namespace
			if ns == "" {
				ns = "apps"
			}
			got := describeSteps(ChartSteps(set, ns, tt.isUpgrade))
			if !slices.Equal(got, tt.want) {
				t.Errorf("ChartSteps =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestPlanHooks(t *testing.T) {
	set := Set{Objects: objects(t,
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}`,
		`{apiVersion: v1, kind: Namespace, metadata: {name: demo}}`,
		hookDoc("second", "pre-delete", "1"),
		hookDoc("first", "pre-delete,post-delete", "-1"),
		hookDoc("after", "post-delete", ""),
	)}
	tests := []struct {
		event     HookEvent
		namespace string
		want      []string
	}{
		// Only the hooks of the event, by weight.
		{HookPreDelete, "apps", []string{"pre-delete hooks (weight -1): ConfigMap/first", "pre-delete hooks (weight 1): ConfigMap/second"}},
		// A hook of two delete events runs in each of the two calls.
		{HookPostDelete, "apps", []string{"post-delete hooks (weight -1): ConfigMap/first", "post-delete hooks (weight 0): ConfigMap/after"}},
		// The release's namespace, which the set brings, is applied
		// first: a hook finds it even when someone deleted it.
		{HookPreDelete, "demo", []string{"target namespace: Namespace/demo", "pre-delete hooks (weight -1): ConfigMap/first", "pre-delete hooks (weight 1): ConfigMap/second"}},
		// No hooks: no steps, not even the namespace.
		{HookPreInstall, "demo", nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.event)+" in "+tt.namespace, func(t *testing.T) {
			if got := describeSteps(planHooks(set, tt.namespace, tt.event)); !slices.Equal(got, tt.want) {
				t.Errorf("planHooks = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDeletePolicies(t *testing.T) {
	tests := []struct {
		name, annotation string
		want             []hookDeletePolicy
	}{
		// Helm's default.
		{"none", "", []hookDeletePolicy{policyBeforeCreation}},
		// A comma list, spaces trimmed.
		{"two", "hook-succeeded, hook-failed", []hookDeletePolicy{policySucceeded, policyFailed}},
		// Given explicitly without before-hook-creation: the old object stays.
		{"succeeded only", "hook-succeeded", []hookDeletePolicy{policySucceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{apiVersion: v1, kind: ConfigMap, metadata: {name: h, annotations: {helm.sh/hook: pre-install}}}`
			if tt.annotation != "" {
				doc = fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: h, annotations: {helm.sh/hook: pre-install, helm.sh/hook-delete-policy: %q}}}`, tt.annotation)
			}
			if got := deletePolicies(mustObject(t, doc)); !slices.Equal(got, tt.want) {
				t.Errorf("deletePolicies = %q, want %q", got, tt.want)
			}
		})
	}
}
