package apply

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestManagerOf(t *testing.T) {
	tests := []struct {
		msg, want string
	}{
		// An Apply manager.
		{`conflict with "kubectl"`, "kubectl"},
		// An Update manager: version and time are dropped.
		{`conflict with "helm" using v1 at 2025-01-01T00:00:00Z`, "helm"},
		// A subresource manager.
		{`conflict with "kube-controller-manager" with subresource "scale"`, "kube-controller-manager"},
		// An unknown shape is kept whole.
		{`something else`, "something else"},
	}
	for _, tt := range tests {
		if got := managerOf(tt.msg); got != tt.want {
			t.Errorf("managerOf(%q) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}

func TestFieldConflict(t *testing.T) {
	cm := ref("", "v1", "ConfigMap", "demo", "settings")
	conflict := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   409,
		Reason: metav1.StatusReasonConflict,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl"`, Field: ".data.key"},
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "helm" using v1`, Field: ".data.b"},
			{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl"`, Field: ".data.a"},
		}},
	}}

	got := fieldConflict(cm, fmt.Errorf("wrapped: %w", conflict))
	if got == nil {
		t.Fatal("fieldConflict = nil for a field manager conflict")
	}
	if want := []string{"helm", "kubectl"}; !slices.Equal(got.Managers, want) {
		t.Errorf("Managers = %v, want %v", got.Managers, want)
	}
	if want := []string{".data.a", ".data.b", ".data.key"}; !slices.Equal(got.Fields, want) {
		t.Errorf("Fields = %v, want %v", got.Fields, want)
	}
	msg := got.Error()
	for _, part := range []string{"ConfigMap demo/settings", `"annex"`, `"helm", "kubectl"`, ".data.key", "delete the object"} {
		if !strings.Contains(msg, part) {
			t.Errorf("error %q does not mention %q", msg, part)
		}
	}

	// A resourceVersion conflict is no field conflict.
	plain := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "settings", errors.New("the object has been modified"))
	if c := fieldConflict(cm, plain); c != nil {
		t.Errorf("fieldConflict of a plain conflict = %v, want nil", c)
	}
}

func TestConflictErrorInstallation(t *testing.T) {
	err := &ConflictError{Object: ref("", "v1", "ConfigMap", "demo", "settings"), Installation: "team-a/podinfo"}
	want := "apply ConfigMap demo/settings: the object belongs to installation team-a/podinfo; remove it from that installation or delete the object"
	if err.Error() != want {
		t.Errorf("Error() =\n%s\nwant\n%s", err.Error(), want)
	}
}

func TestExplainWebhookFailure(t *testing.T) {
	unreachable := errors.New(`Internal error occurred: failed calling webhook "validate.nginx.ingress.kubernetes.io": ` +
		`failed to call webhook: Post "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/networking/v1/ingresses?timeout=10s": ` +
		`no endpoints available for service "ingress-nginx-controller-admission"`)
	conversion := errors.New(`conversion webhook for cert-manager.io/v1, Kind=Certificate failed: Post "https://cert-manager-webhook.cert-manager.svc:443/convert?timeout=30s": dial tcp 10.96.0.12:443: connect: connection refused`)
	denied := errors.New(`admission webhook "validate.kyverno.svc" denied the request: policy require-labels: label app is required`)
	for _, tc := range []struct {
		name         string
		err          error
		noContainers bool
		hint         bool
	}{
		// An admission webhook that cannot be called on kwok's nodes: hinted.
		{"admission webhook, fake nodes", unreachable, true, true},
		// A conversion webhook alike.
		{"conversion webhook, fake nodes", conversion, true, true},
		// The same failure on a cluster with real nodes has other causes:
		// no hint.
		{"admission webhook, real nodes", unreachable, false, false},
		// A webhook that answered and refused is not unreachable.
		{"denied", denied, true, false},
		// Other errors are left alone.
		{"other", errors.New("namespaces \"demo\" not found"), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := explainWebhookFailure(tc.err, tc.noContainers)
			if !errors.Is(got, tc.err) {
				t.Errorf("the result %v does not wrap the error", got)
			}
			if hinted := strings.HasSuffix(got.Error(), noContainersHint); hinted != tc.hint {
				t.Errorf("hinted = %v, want %v: %v", hinted, tc.hint, got)
			}
		})
	}
}
