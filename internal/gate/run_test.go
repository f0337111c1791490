package gate

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/news"
)

// fakePort answers the gates from its fields and records what they
// asked, in order.
type fakePort struct {
	installedErr, servesErr, crdsErr, approvalErr, hooksErr error
	unserved                                                string // a kind the cluster does not serve
	crds                                                    map[string]*unstructured.Unstructured
	approval                                                *v1alpha1.ChangeApproval
	hooks                                                   HookOutcome
	now                                                     time.Time

	asked  []string
	events []string
}

func (p *fakePort) Installed() ([]*unstructured.Unstructured, error) {
	p.asked = append(p.asked, "installed")
	return nil, p.installedErr
}

func (p *fakePort) Serves(gvk schema.GroupVersionKind) (kubeapis.Answer, error) {
	p.asked = append(p.asked, "serves")
	if p.servesErr != nil {
		return kubeapis.Answer{}, p.servesErr
	}
	if gvk.Kind == p.unserved {
		return kubeapis.Answer{}, nil
	}
	return kubeapis.Answer{Served: true, Versions: []string{gvk.Version}, Namespaced: true}, nil
}

func (p *fakePort) CRDs([]string) (map[string]*unstructured.Unstructured, error) {
	p.asked = append(p.asked, "crds")
	return p.crds, p.crdsErr
}

func (p *fakePort) Approval(*Pending, []string) (*v1alpha1.ChangeApproval, error) {
	p.asked = append(p.asked, "approval")
	return p.approval, p.approvalErr
}

func (p *fakePort) AskHooks(HookChange) (HookOutcome, error) {
	p.asked = append(p.asked, "hooks")
	return p.hooks, p.hooksErr
}

func (p *fakePort) Event(eventType, reason, message string) {
	p.events = append(p.events, eventType+" "+reason+": "+message)
}

func (p *fakePort) Now() time.Time { return p.now }

func object(apiVersion, kind, name string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetName(name)
	return o
}

func crd(name string) *unstructured.Unstructured {
	o := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
	_ = unstructured.SetNestedField(o.Object, "Namespaced", "spec", "scope")
	return o
}

func TestRun(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	apiDown := errors.New("connection refused")
	change := &Pending{Event: EventPreUpgrade, From: "1.0.0", To: "2.0.0", Digest: "sha256:c", Objects: []*unstructured.Unstructured{object("v1", "ConfigMap", "cm")}}
	install := &Pending{Event: EventPreInstall, To: "2.0.0", Digest: "sha256:i", Objects: change.Objects}
	withCRD := &Pending{Event: EventPreUpgrade, From: "1.0.0", To: "2.0.0", Digest: "sha256:d",
		Objects: []*unstructured.Unstructured{crd("widgets.example.com")}}
	for _, tc := range []struct {
		name   string
		change *Pending
		policy v1alpha1.CRDPolicy
		port   fakePort
		// want: the stop (nil: the change goes on), whether status.change
		// stays, the port calls, the Events and the error.
		stop        *news.Stop
		stopHas     string
		keepsChange bool
		requeue     time.Duration
		keep        bool
		asked       string
		events      string
		err         error
	}{
		{name: "no change", asked: ""},
		{name: "no change, Skip keeps the installed CRDs", policy: v1alpha1.CRDPolicySkip,
			port:  fakePort{crds: map[string]*unstructured.Unstructured{"widgets.example.com": crd("widgets.example.com")}},
			asked: "crds", keep: true},
		{name: "no change, Skip cannot read the CRDs", policy: v1alpha1.CRDPolicySkip, port: fakePort{crdsErr: apiDown},
			stop:  retry(v1alpha1.ReasonClusterUnavailable, "reading the CustomResourceDefinitions installed on the hub cluster: connection refused"),
			asked: "crds"},
		{name: "every gate agrees", change: change, asked: "installed serves approval hooks"},
		{name: "the installed revision cannot be read", change: change, port: fakePort{installedErr: apiDown}, keepsChange: true,
			err: apiDown, asked: "installed"},
		{name: "served kinds cannot be read", change: change, port: fakePort{servesErr: apiDown}, keepsChange: true,
			stop:  retry(v1alpha1.ReasonClusterUnavailable, "reading the API kinds the hub cluster serves: connection refused"),
			asked: "installed serves"},
		{name: "a kind not served stops before anyone is asked", change: change, port: fakePort{unserved: "ConfigMap"}, keepsChange: true,
			stop: &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonKindNotServed}, stopHas: "ConfigMap",
			asked: "installed serves"},
		{name: "CRDs cannot be read", change: withCRD, port: fakePort{crdsErr: apiDown}, keepsChange: true,
			stop:  retry(v1alpha1.ReasonClusterUnavailable, "reading the CustomResourceDefinitions installed on the hub cluster: connection refused"),
			asked: "installed serves crds"},
		{name: "a new CRD passes", change: withCRD, asked: "installed serves crds approval hooks"},
		{name: "approved", change: change, port: fakePort{approval: &v1alpha1.ChangeApproval{State: v1alpha1.ApprovalApproved, ApprovedBy: "bob", RequestedBy: "alice"}},
			asked:  "installed serves approval hooks",
			events: "Normal Approved: bob approved the change to 2.0.0 (digest sha256:c), requested by alice"},
		{name: "denied", change: change, port: fakePort{approval: &v1alpha1.ChangeApproval{State: v1alpha1.ApprovalDenied, DeniedBy: "bob", DenialReason: "not now"}},
			keepsChange: true, asked: "installed serves approval",
			stop: terminal(v1alpha1.ReasonApprovalDenied, "bob denied ext changing 1.0.0 → 2.0.0 (digest sha256:c): not now; nothing of it was applied; "+
				"change spec.version or spec.values to request another change, or delete the denying Approval to have it reviewed again")},
		{name: "waits for approval", change: install, port: fakePort{approval: &v1alpha1.ChangeApproval{State: v1alpha1.ApprovalPending, Policies: []string{"majors"}, Reasons: []string{"a major upgrade"}}},
			keepsChange: true, asked: "installed serves approval",
			stop: wait(v1alpha1.ReasonApprovalRequired, "ext installing 2.0.0 needs approval (policy majors: a major upgrade); approve it with: annexctl approve inst -n team --digest sha256:i")},
		{name: "an approval refused", change: change, port: fakePort{approval: &v1alpha1.ChangeApproval{State: v1alpha1.ApprovalPending, Policies: []string{"majors"}, Reasons: []string{"a major upgrade"}, Refused: []string{"self-approval by alice"}}},
			keepsChange: true, asked: "installed serves approval",
			stop: wait(v1alpha1.ReasonApprovalRefused, "ext changing 1.0.0 → 2.0.0 needs approval (policy majors: a major upgrade); approve it with: annexctl approve inst -n team --digest sha256:c; refused: self-approval by alice")},
		{name: "approvals cannot be read", change: change, port: fakePort{approvalErr: apiDown}, keepsChange: true,
			err: apiDown, asked: "installed serves approval"},
		{name: "a hook refuses", change: change, port: fakePort{hooks: HookOutcome{Request: "req", State: v1alpha1.HookFailed, Message: "hook scan refused"}},
			keepsChange: true, asked: "installed serves approval hooks",
			stop: terminal(v1alpha1.ReasonHookRefused, "hook scan refused; the change waits until the hook answers otherwise or the change's content changes (spec.values, spec.version); delete HookRequest req to ask the hooks again")},
		{name: "a hook has not answered", change: change, port: fakePort{now: now, hooks: HookOutcome{Request: "req", State: v1alpha1.HookPending, Message: "waiting for scan", Deadline: now.Add(time.Minute)}},
			keepsChange: true, asked: "installed serves approval hooks", requeue: time.Minute,
			stop: wait(v1alpha1.ReasonHookPending, "waiting for scan")},
		{name: "the hooks agree", change: change, port: fakePort{hooks: HookOutcome{Request: "req", State: v1alpha1.HookSucceeded}},
			asked: "installed serves approval hooks"},
		{name: "the hooks cannot be asked", change: change, port: fakePort{hooksErr: apiDown}, keepsChange: true,
			err: apiDown, asked: "installed serves approval hooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: "inst", Namespace: "team"}}
			inst.Spec.Extension = "ext"
			inst.Spec.Upgrade.CRDPolicy = tc.policy
			inst.Status.Change = &v1alpha1.PendingChange{Digest: "sha256:old"}
			p := tc.port
			out, err := Run(Input{Inst: inst, Change: tc.change, Version: "2.0.0", Namespace: "team",
				Applies: []*unstructured.Unstructured{crd("widgets.example.com")}}, &p)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			switch {
			case tc.stop == nil && out.Stop != nil, tc.stop != nil && out.Stop == nil:
				t.Fatalf("stop %+v, want %+v", out.Stop, tc.stop)
			case tc.stop != nil && (out.Stop.Kind != tc.stop.Kind || out.Stop.Reason != tc.stop.Reason ||
				tc.stop.Message != "" && out.Stop.Message != tc.stop.Message || !strings.Contains(out.Stop.Message, tc.stopHas)):
				t.Fatalf("stop %+v\nwant %+v (containing %q)", out.Stop, tc.stop, tc.stopHas)
			}
			if got := strings.Join(p.asked, " "); got != tc.asked {
				t.Errorf("asked %q, want %q", got, tc.asked)
			}
			if got := strings.Join(p.events, "\n"); got != tc.events {
				t.Errorf("events %q, want %q", got, tc.events)
			}
			if out.RequeueAfter != tc.requeue {
				t.Errorf("requeue after %v, want %v", out.RequeueAfter, tc.requeue)
			}
			if (len(out.Keep) > 0) != tc.keep {
				t.Errorf("keep %v, want kept %v", out.Keep, tc.keep)
			}
			if kept := inst.Status.Change != nil; kept != tc.keepsChange {
				t.Errorf("status.change %+v, want kept %v", inst.Status.Change, tc.keepsChange)
			}
			if tc.keepsChange && tc.change != nil && tc.err == nil && inst.Status.Change.Digest != tc.change.Digest {
				t.Errorf("status.change describes %s, want the change %s", inst.Status.Change.Digest, tc.change.Digest)
			}
		})
	}
}

func TestUninstall(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "hookrequests"}, "req", errors.New("namespace team is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	for _, tc := range []struct {
		name     string
		port     fakePort
		done     bool
		stop     string
		events   string
		err      bool
		keepsChg bool
	}{
		{name: "no hook", done: true},
		{name: "the hooks agree", port: fakePort{hooks: HookOutcome{Request: "req", State: v1alpha1.HookSucceeded}}, done: true},
		{name: "a hook holds the uninstall", port: fakePort{hooks: HookOutcome{Request: "req", State: v1alpha1.HookPending, Message: "waiting"}},
			stop: v1alpha1.ReasonHookPending, keepsChg: true},
		{name: "a hook refuses", port: fakePort{hooks: HookOutcome{Request: "req", State: v1alpha1.HookFailed, Message: "no"}},
			stop: v1alpha1.ReasonHookRefused, keepsChg: true},
		{name: "the namespace is being deleted", port: fakePort{hooksErr: terminating}, done: true,
			events: "Warning HooksSkipped: namespace team is being deleted: the PreUninstall hooks cannot be asked (" + terminating.Error() + ")"},
		{name: "the hooks cannot be asked", port: fakePort{hooksErr: errors.New("down")}, err: true, keepsChg: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: "inst", Namespace: "team"}}
			inst.Status.InstalledVersion = "1.0.0"
			p := tc.port
			out, done, err := Uninstall(inst, []*unstructured.Unstructured{object("v1", "ConfigMap", "cm")}, "team", &p)
			if (err != nil) != tc.err || done != tc.done {
				t.Fatalf("done %v, error %v; want done %v, error %v", done, err, tc.done, tc.err)
			}
			if got := ""; out.Stop != nil {
				got = out.Stop.Reason
				if got != tc.stop {
					t.Errorf("stop %+v, want reason %s", out.Stop, tc.stop)
				}
			} else if tc.stop != "" {
				t.Errorf("no stop, want reason %s", tc.stop)
			}
			if got := strings.Join(p.events, "\n"); got != tc.events {
				t.Errorf("events %q, want %q", got, tc.events)
			}
			if kept := inst.Status.Change != nil; kept != tc.keepsChg {
				t.Errorf("status.change %+v, want kept %v", inst.Status.Change, tc.keepsChg)
			}
			if tc.keepsChg && (inst.Status.Change.Event != EventPreUninstall || inst.Status.Change.FromVersion != "1.0.0") {
				t.Errorf("status.change %+v, want the PreUninstall change from 1.0.0", inst.Status.Change)
			}
		})
	}
}

// Scope says what a scope that cannot be read, or grants that cannot be
// narrowed, mean for the installation; narrowed grants go on.
func TestScope(t *testing.T) {
	role := serviceAccount + "\n---\n" + `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-manager}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get]}` + "\n---\n" + bindOpManager
	wildcard := strings.Replace(role, "resources: [pods]", `resources: ["*"]`, 1)
	for _, tc := range []struct {
		name    string
		objects string
		readErr error
		want    *news.Stop
	}{
		{name: "narrowed", objects: role},
		{name: "the scope cannot be read", objects: role, readErr: errors.New("connection refused"),
			want: retry(v1alpha1.ReasonClusterUnavailable, "spec.scopedGrants: reading the scope of the resources ext 2.0.0 grants from the hub cluster: connection refused")},
		{name: "cannot be narrowed", objects: wildcard,
			want: terminal(v1alpha1.ReasonScopedGrantsRefused, `spec.scopedGrants: cannot narrow the grants of ext 2.0.0: ClusterRole op-manager rules[0]: resources "*" cannot be told namespaced or cluster-scoped; list the resources; `+
				"remove spec.scopedGrants, or install a version whose RBAC can be narrowed")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{}
			inst.Spec.Extension = "ext"
			inst.Spec.ScopedGrants = &v1alpha1.ScopedGrants{Namespaces: []string{"team-a"}}
			scoping, stop := Scope(inst, "2.0.0", objects(t, tc.objects), func(gr schema.GroupResource) (bool, bool, error) {
				ns, known := scopeOf(gr)
				return ns, known, tc.readErr
			})
			switch {
			case (stop == nil) != (tc.want == nil), stop != nil && *stop != *tc.want:
				t.Fatalf("stop %+v\nwant %+v", stop, tc.want)
			case stop == nil && len(scoping.Changes) == 0:
				t.Fatalf("nothing narrowed: %+v", scoping)
			}
		})
	}
}
