package gate

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestHookAnswer(t *testing.T) {
	cases := []struct {
		name       string
		conditions string
		want       v1alpha1.HookState
		message    string
	}{
		// No status yet: no answer.
		{"silent", `[]`, v1alpha1.HookPending, ""},
		{"succeeded", `[{type: Succeeded, status: "True", message: clean}]`, v1alpha1.HookSucceeded, "clean"},
		// Failed wins over a stale Succeeded.
		{"failed", `[{type: Succeeded, status: "True"}, {type: Failed, status: "True", message: "CVE-1"}]`, v1alpha1.HookFailed, "CVE-1"},
		// Succeeded=False refuses, with the reason when there is no message.
		{"succeeded false", `[{type: Succeeded, status: "False", reason: Denied}]`, v1alpha1.HookFailed, "Denied"},
		{"kstatus ready", `[{type: Ready, status: "True"}]`, v1alpha1.HookSucceeded, ""},
		{"kstatus not ready", `[{type: Ready, status: "False", message: "bad image"}]`, v1alpha1.HookFailed, "bad image"},
		// Ready=False while Reconciling is still at work.
		{"kstatus reconciling", `[{type: Ready, status: "False"}, {type: Reconciling, status: "True"}]`, v1alpha1.HookPending, ""},
		{"unknown", `[{type: Succeeded, status: Unknown}]`, v1alpha1.HookPending, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var conds []any
			if err := yaml.Unmarshal([]byte(c.conditions), &conds); err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": conds}}}
			got, msg := HookAnswer(obj)
			if got != c.want || msg != c.message {
				t.Fatalf("got %s %q, want %s %q", got, msg, c.want, c.message)
			}
		})
	}
}

func TestHookVerdict(t *testing.T) {
	hooks := map[string]*v1alpha1.Hook{"a": {}, "b": {}}
	cases := []struct {
		name    string
		results []v1alpha1.HookResult
		want    v1alpha1.HookState
		message string
	}{
		{"all agree", []v1alpha1.HookResult{{Name: "a", State: v1alpha1.HookSucceeded}, {Name: "b", State: v1alpha1.HookIgnored}},
			v1alpha1.HookSucceeded, "hooks agreed: a; ignored: b"},
		// The failing hook is named with its own message, even while another waits.
		{"one refuses", []v1alpha1.HookResult{{Name: "a", State: v1alpha1.HookPending, Message: "waiting"}, {Name: "b", State: v1alpha1.HookFailed, Message: "CVE-1"}},
			v1alpha1.HookFailed, "hook b refused the change: CVE-1"},
		{"timed out", []v1alpha1.HookResult{{Name: "a", State: v1alpha1.HookTimedOut, Message: "did not answer within spec.timeout (2m0s)"}},
			v1alpha1.HookFailed, "hook a did not answer within spec.timeout (2m0s) (failurePolicy Fail)"},
		{"waiting", []v1alpha1.HookResult{{Name: "a", State: v1alpha1.HookPending, Message: "x"}, {Name: "b", State: v1alpha1.HookWaiting, Message: "y"}},
			v1alpha1.HookPending, "waiting for hook a: x; hook b: y"},
		// A Hook deleted since no longer holds the change.
		{"deleted hook's refusal", []v1alpha1.HookResult{{Name: "gone", State: v1alpha1.HookFailed, Message: "no"}, {Name: "a", State: v1alpha1.HookSucceeded}},
			v1alpha1.HookSucceeded, "hooks agreed: a; ignored: gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, msg := HookVerdict(c.results, hooks)
			if got != c.want || msg != c.message {
				t.Fatalf("got %s %q, want %s %q", got, msg, c.want, c.message)
			}
		})
	}
}

func TestSelectHooks(t *testing.T) {
	hook := func(name string, order int32, sel v1alpha1.HookSelector, events ...v1alpha1.HookEvent) v1alpha1.Hook {
		return v1alpha1.Hook{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HookSpec{Order: order, Selector: sel, Events: events}}
	}
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "podinfo"},
	}
	hooks := []v1alpha1.Hook{
		hook("z-all", 0, v1alpha1.HookSelector{}, v1alpha1.HookPreInstall),
		hook("a-all", 0, v1alpha1.HookSelector{}, v1alpha1.HookPreInstall),
		// Lower order runs first, whatever its name.
		hook("late-first", -1, v1alpha1.HookSelector{Extensions: []string{"podinfo"}, Clusters: []string{"hub"}}, v1alpha1.HookPreInstall),
		hook("other-ext", 0, v1alpha1.HookSelector{Extensions: []string{"redis"}}, v1alpha1.HookPreInstall),
		hook("other-cluster", 0, v1alpha1.HookSelector{Clusters: []string{"edge-1"}}, v1alpha1.HookPreInstall),
		hook("labels", 1, v1alpha1.HookSelector{Installations: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}, v1alpha1.HookPreInstall),
		hook("other-labels", 1, v1alpha1.HookSelector{Installations: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}, v1alpha1.HookPreInstall),
		hook("upgrades-only", 0, v1alpha1.HookSelector{}, v1alpha1.HookPreUpgrade),
	}
	got := strings.Join(SelectHooks(hooks, inst, string(v1alpha1.HookPreInstall)), ",")
	if want := "late-first,a-all,z-all,labels"; got != want {
		t.Fatalf("selected %s, want %s", got, want)
	}
}

func TestImagesOf(t *testing.T) {
	docs := []string{
		`{kind: Deployment, spec: {template: {spec: {initContainers: [{image: "busybox:1"}], containers: [{image: "b:2"}, {image: "a:1"}]}}}}`,
		`{kind: CronJob, spec: {jobTemplate: {spec: {template: {spec: {containers: [{image: "cron:1"}]}}}}}}`,
		`{kind: Pod, spec: {containers: [{image: "a:1"}], ephemeralContainers: [{image: "debug:1"}]}}`,
		`{kind: ConfigMap, data: {image: "not-an-image"}}`,
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		o := map[string]any{}
		if err := yaml.Unmarshal([]byte(d), &o); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: o})
	}
	if got, want := strings.Join(imagesOf(objs), ","), "a:1,b:2,busybox:1,cron:1,debug:1"; got != want {
		t.Fatalf("images %s, want %s", got, want)
	}
}

func TestHookRequestName(t *testing.T) {
	long := strings.Repeat("a", 243) + "." + strings.Repeat("b", 9) // 253 characters, the longest name; the cut meets the dot
	for _, tc := range []struct{ installation, event, digest, want string }{
		// A short installation: the name says what it is for.
		{"podinfo", string(v1alpha1.HookPreInstall), "sha256:0123456789abcdef", "podinfo-preinstall-0123456789"},
		// The longest installation name: shortened to an object name (checked below).
		{long, string(v1alpha1.HookPreUpgrade), "sha256:0123456789abcdef", ""},
	} {
		got := HookRequestName(tc.installation, tc.event, tc.digest)
		if tc.want != "" && got != tc.want {
			t.Errorf("HookRequestName(%q) = %q, want %q", tc.installation, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("HookRequestName(%q) = %q: %v", tc.installation, got, errs)
		}
	}
	// Each change of a long-named installation has its own request.
	if HookRequestName(long, string(v1alpha1.HookPreInstall), "sha256:aa") == HookRequestName(long, string(v1alpha1.HookPreInstall), "sha256:bb") {
		t.Error("two changes of a long-named installation share a HookRequest name")
	}
}

// TestHookSelects: every field a selector gives must match; the hub is
// "hub"; an invalid label selector selects nothing.
func TestHookSelects(t *testing.T) {
	hub := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "podinfo"},
	}
	edge := hub.DeepCopy()
	edge.Spec.Cluster = "edge-1"
	team := func(op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: op, Values: values}}}
	}
	for _, tc := range []struct {
		name string
		sel  v1alpha1.HookSelector
		inst *v1alpha1.ExtensionInstallation
		want bool
	}{
		{"empty selects all", v1alpha1.HookSelector{}, edge, true},
		{"extension", v1alpha1.HookSelector{Extensions: []string{"redis", "podinfo"}}, hub, true},
		{"other extension", v1alpha1.HookSelector{Extensions: []string{"redis"}}, hub, false},
		{"hub by name", v1alpha1.HookSelector{Clusters: []string{"hub"}}, hub, true},
		{"hub is not a managed cluster", v1alpha1.HookSelector{Clusters: []string{"hub"}}, edge, false},
		{"managed cluster", v1alpha1.HookSelector{Clusters: []string{"edge-1"}}, edge, true},
		{"labels", v1alpha1.HookSelector{Installations: team(metav1.LabelSelectorOpIn, "a")}, hub, true},
		{"other labels", v1alpha1.HookSelector{Installations: team(metav1.LabelSelectorOpIn, "b")}, hub, false},
		// In without values does not parse.
		{"invalid label selector", v1alpha1.HookSelector{Installations: team(metav1.LabelSelectorOpIn)}, hub, false},
		{"every field must match", v1alpha1.HookSelector{Extensions: []string{"podinfo"}, Clusters: []string{"edge-2"}}, edge, false},
	} {
		if got := hookSelects(tc.sel, tc.inst); got != tc.want {
			t.Errorf("%s: selects %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSelectHooksSkipsDeleted: a Hook being deleted judges no new change.
func TestSelectHooksSkipsDeleted(t *testing.T) {
	gone := v1alpha1.Hook{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &metav1.Time{Time: time.Unix(1, 0)}},
		Spec: v1alpha1.HookSpec{Events: []v1alpha1.HookEvent{v1alpha1.HookPreUninstall}}}
	kept := v1alpha1.Hook{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Spec: gone.Spec}
	inst := &v1alpha1.ExtensionInstallation{}
	if got := SelectHooks([]v1alpha1.Hook{gone, kept}, inst, string(v1alpha1.HookPreUninstall)); len(got) != 1 || got[0] != "kept" {
		t.Fatalf("selected %v, want [kept]", got)
	}
}

// TestFailurePolicy: how a hook's failurePolicy reads an answer
// (DecideHook) and a resource that cannot be made (HookNotServed).
func TestFailurePolicy(t *testing.T) {
	fail := &v1alpha1.Hook{Spec: v1alpha1.HookSpec{FailurePolicy: v1alpha1.HookFail}}
	ignore := &v1alpha1.Hook{Spec: v1alpha1.HookSpec{FailurePolicy: v1alpha1.HookIgnore}}
	for _, tc := range []struct {
		name    string
		got     v1alpha1.HookResult
		want    v1alpha1.HookState
		message string
	}{
		{"agreed", DecideHook(ignore, v1alpha1.HookResult{}, v1alpha1.HookSucceeded, "clean"), v1alpha1.HookSucceeded, "clean"},
		{"refused under Fail", DecideHook(fail, v1alpha1.HookResult{}, v1alpha1.HookFailed, "CVE-1"), v1alpha1.HookFailed, "CVE-1"},
		{"refused under Ignore", DecideHook(ignore, v1alpha1.HookResult{}, v1alpha1.HookFailed, "CVE-1"),
			v1alpha1.HookIgnored, "Failed: CVE-1 (ignored: failurePolicy Ignore)"},
		{"timed out under Ignore", DecideHook(ignore, v1alpha1.HookResult{}, v1alpha1.HookTimedOut, "late"),
			v1alpha1.HookIgnored, "TimedOut: late (ignored: failurePolicy Ignore)"},
		// The policy's default is Fail.
		{"not served by default", HookNotServed(&v1alpha1.Hook{}, v1alpha1.HookResult{}, "no CRD"), v1alpha1.HookPending, "no CRD"},
		{"not served under Ignore", HookNotServed(ignore, v1alpha1.HookResult{}, "no CRD"), v1alpha1.HookIgnored, "no CRD (ignored: failurePolicy Ignore)"},
	} {
		if tc.got.State != tc.want || tc.got.Message != tc.message {
			t.Errorf("%s: got %s %q, want %s %q", tc.name, tc.got.State, tc.got.Message, tc.want, tc.message)
		}
	}
	// What the result held besides stays.
	res := DecideHook(fail, v1alpha1.HookResult{Name: "scan", Resource: &v1alpha1.ObjectReference{Name: "r"}}, v1alpha1.HookSucceeded, "")
	if res.Name != "scan" || res.Resource == nil {
		t.Errorf("DecideHook dropped the result's name or resource: %+v", res)
	}
}

// TestHookInput: spec.annex describes the change, and takes the
// permissions' growth from status.change only when it describes the
// same change.
func TestHookInput(t *testing.T) {
	var deploy map[string]any
	if err := yaml.Unmarshal([]byte(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: web},
  spec: {template: {spec: {containers: [{image: "web:1"}]}}}}`), &deploy); err != nil {
		t.Fatal(err)
	}
	inst := &v1alpha1.ExtensionInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec:       v1alpha1.ExtensionInstallationSpec{Extension: "podinfo", Cluster: "edge-1"},
		Status: v1alpha1.ExtensionInstallationStatus{Change: &v1alpha1.PendingChange{
			Digest: "sha256:1", PermissionsGrow: []string{"more"}, PermissionsShrink: []string{"less"}}},
	}
	c := HookChange{Installation: inst, Event: string(v1alpha1.HookPreUpgrade), From: "1.0.0", To: "2.0.0",
		ArtifactDigest: "sha256:a", Digest: "sha256:1", TargetNamespace: "apps",
		Objects: []*unstructured.Unstructured{{Object: deploy}}}
	ref := v1alpha1.SecretKeyReference{Namespace: "team", Name: "req", Key: "objects.yaml"}
	in := HookInput(c, ref)
	if in.Installation != (v1alpha1.NamespacedName{Namespace: "team", Name: "web"}) || in.Cluster != "edge-1" || in.Extension != "podinfo" ||
		in.Event != v1alpha1.HookPreUpgrade || in.FromVersion != "1.0.0" || in.ToVersion != "2.0.0" ||
		in.ArtifactDigest != "sha256:a" || in.Digest != "sha256:1" || in.Objects != ref {
		t.Errorf("input %+v does not describe the change", in)
	}
	if strings.Join(in.Images, ",") != "web:1" {
		t.Errorf("images %v, want [web:1]", in.Images)
	}
	if strings.Join(in.Permissions.Grows, ",") != "more" || strings.Join(in.Permissions.Shrinks, ",") != "less" {
		t.Errorf("permissions %+v, want status.change's growth", in.Permissions)
	}
	c.Digest = "sha256:2"
	if in := HookInput(c, ref); in.Permissions.Grows != nil || in.Permissions.Shrinks != nil {
		t.Errorf("permissions %+v taken from the status of another change", in.Permissions)
	}
}

// What a verdict makes of a change: status.change.hooks, the refusal's
// words for a change and for an uninstall, and when a pending one is
// looked at again.
func TestHookOutcome(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	refused := HookOutcome{Request: "x-abc", State: v1alpha1.HookFailed, Message: "hook scan refused: CVE"}
	if s := refused.Summary(); s.Request != "x-abc" || s.State != v1alpha1.HookFailed || s.Message != "hook scan refused: CVE" {
		t.Errorf("Summary = %+v", s)
	}
	if got := refused.Refusal(EventPreInstall); got != "hook scan refused: CVE; the change waits until the hook answers otherwise or the change's content changes (spec.values, spec.version); delete HookRequest x-abc to ask the hooks again" {
		t.Errorf("Refusal(install) = %q", got)
	}
	if got := refused.Refusal(EventPreUninstall); !strings.Contains(got, "; the uninstall waits until the hook answers otherwise; delete HookRequest x-abc") {
		t.Errorf("Refusal(uninstall) = %q", got)
	}
	for _, tc := range []struct {
		deadline time.Time
		want     time.Duration
	}{
		{time.Time{}, 0}, // no deadline: the answers wake it
		{now.Add(30 * time.Second), 30 * time.Second},   // until the first deadline
		{now.Add(-time.Minute), 100 * time.Millisecond}, // past it: soon, never at once
	} {
		if got := (HookOutcome{State: v1alpha1.HookPending, Deadline: tc.deadline}).RecheckAfter(now); got != tc.want {
			t.Errorf("RecheckAfter(deadline %v) = %v, want %v", tc.deadline, got, tc.want)
		}
	}
}
