package apply

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func mustObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	// Through JSON, so that numbers are int64 as the API server's are.
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("parse test object: %v", err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		t.Fatalf("parse test object: %v", err)
	}
	return obj
}

func TestObjectStatus(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want string
		// message, when set, is the message wanted.
		message string
	}{
		{
			// Nothing has looked at it yet, but there is nothing to wait for.
			name: "deployment scaled to zero without status",
			obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo, generation: 1}
spec: {replicas: 0}`,
			want: "Current",
		},
		{
			// The controller saw this generation.
			name: "statefulset scaled to zero, generation observed",
			obj: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: demo, generation: 3}
spec: {replicas: 0}
status: {observedGeneration: 3}`,
			want: "Current",
		},
		{
			// The controller has not seen the scale-down yet: kstatus decides.
			name: "replicaset scaled to zero, old generation observed",
			obj: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-1, namespace: demo, generation: 2}
spec: {replicas: 0}
status: {observedGeneration: 1, replicas: 1}`,
			want: "InProgress",
		},
		{
			// One replica wanted and no controller: not ready.
			name: "deployment with one replica and no status",
			obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo, generation: 1}
spec: {replicas: 1}`,
			want: "InProgress",
		},
		{
			// A Deployment whose replicas field is absent defaults to 1.
			name: "deployment without replicas field",
			obj: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo, generation: 1}
spec: {}`,
			want: "InProgress",
		},
		{
			// The zero-replica rule is only for apps workloads.
			name: "custom kind with replicas 0 and Ready False",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Deployment
metadata: {name: web, namespace: demo, generation: 1}
spec: {replicas: 0}
status:
  observedGeneration: 1
  conditions: [{type: Ready, status: "False", reason: Waiting, message: waiting}]`,
			want: "InProgress",
		},
		{
			// A custom resource reporting Ready follows kstatus' generic rules.
			name: "custom resource ready",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1}
status:
  observedGeneration: 1
  conditions: [{type: Ready, status: "True", reason: Done}]`,
			want: "Current",
		},
		{
			// Stalled may be terminal or a slow start: reported, and the
			// caller's deadline decides.
			name: "custom resource stalled",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1}
status:
  observedGeneration: 1
  conditions: [{type: Stalled, status: "True", reason: Broken, message: bad spec}]`,
			want:    "InProgress",
			message: "Stalled: Broken: bad spec",
		},
		{
			// Ready=False with a reason is not ready, and says why.
			name: "custom resource not ready",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 2}
status:
  conditions: [{type: Ready, status: "False", reason: InvalidSpec, message: "spec.text: required"}]`,
			want:    "InProgress",
			message: "Ready condition is False: InvalidSpec: spec.text: required",
		},
		{
			// Ready=True for an older generation does not count yet.
			name: "custom resource ready for an old generation",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 3}
status:
  conditions: [{type: Ready, status: "True", reason: Done, observedGeneration: 2}]`,
			want:    "InProgress",
			message: "Ready condition describes generation 2, not 3",
		},
		{
			// status.observedGeneration behind the spec: the operator has not
			// looked at the change yet.
			name: "custom resource with an old observedGeneration",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 2}
status:
  observedGeneration: 1
  conditions: [{type: Ready, status: "True", reason: Done}]`,
			want:    "InProgress",
			message: "status.observedGeneration 1 is behind metadata.generation 2",
		},
		{
			// Without Ready, Available decides.
			name: "custom resource available",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1}
status:
  conditions: [{type: Available, status: "True"}, {type: Progressing, status: "True"}]`,
			want: "Current",
		},
		{
			// Available=False: not ready.
			name: "custom resource unavailable",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1}
status:
  conditions: [{type: Available, status: "False", reason: MinimumReplicasUnavailable}]`,
			want:    "InProgress",
			message: "Available condition is False: MinimumReplicasUnavailable",
		},
		{
			// An operator that writes no conditions cannot be waited for.
			name: "custom resource without conditions",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1}
spec: {text: hello}`,
			want: "Current",
		},
		{
			// Reconciling=True without Ready: still working.
			name: "custom resource reconciling",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1}
status:
  conditions: [{type: Reconciling, status: "True", reason: Progressing, message: creating}]`,
			want:    "InProgress",
			message: "Reconciling: Progressing: creating",
		},
		{
			// spec.resources[].readyCondition: Synced decides, Ready is ignored.
			name: "custom resource with a configured ready condition, not true",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1, annotations: {annex.dev/ready-condition: Synced}}
status:
  conditions:
  - {type: Ready, status: "True", reason: Up}
  - {type: Synced, status: "False", reason: Conflict, message: ConfigMap hi-greeting belongs to someone else}`,
			want:    "InProgress",
			message: "Synced condition is False: Conflict: ConfigMap hi-greeting belongs to someone else",
		},
		{
			name: "custom resource with a configured ready condition, true",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 2, annotations: {annex.dev/ready-condition: Synced}}
status:
  conditions: [{type: Synced, status: "True", observedGeneration: 2}]`,
			want: "Current",
		},
		{
			// Without the configured condition there is nothing to go by yet.
			name: "custom resource with a configured ready condition, absent",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1, annotations: {annex.dev/ready-condition: Synced}}
status:
  conditions: [{type: Ready, status: "True"}]`,
			want:    "InProgress",
			message: "no Synced condition yet",
		},
		{
			// Uninstall waits for it: the message names what it waits for.
			name: "custom resource being deleted",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [demo.annex.dev/cleanup]}`,
			want:    "Terminating",
			message: "being deleted, waiting for finalizers demo.annex.dev/cleanup",
		},
		{
			// One of spec.resources: its operator has not reported yet.
			name: "custom resource awaiting its first status",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1, annotations: {annex.dev/await-status: "true"}}
spec: {text: hello}`,
			want:    "InProgress",
			message: "no status yet: waiting for its controller to report",
		},
		{
			// Once it has, kstatus rules decide.
			name: "custom resource awaiting status, reported",
			obj: `
apiVersion: demo.annex.dev/v1
kind: Greeting
metadata: {name: hi, namespace: demo, generation: 1, annotations: {annex.dev/await-status: "true"}}
status: {observedGeneration: 1}`,
			want: "Current",
		},
		{
			// A ConfigMap has no status: it is Current once it exists.
			name: "configmap",
			obj: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: demo}`,
			want: "Current",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, msg := objectStatus(mustObject(t, tt.obj))
			if got != tt.want {
				t.Errorf("objectStatus = %s (%q), want %s", got, msg, tt.want)
			}
			if tt.message != "" && msg != tt.message {
				t.Errorf("message = %q, want %q", msg, tt.message)
			}
		})
	}
}

func TestHealthSummary(t *testing.T) {
	pending := func(n int) []ObjectStatus {
		var out []ObjectStatus
		for i := range n {
			out = append(out, ObjectStatus{
				Ref:     ref("apps", "v1", "Deployment", "demo", string(rune('a'+i))),
				Status:  "InProgress",
				Message: "Deployment not Available",
			})
		}
		return out
	}
	tests := []struct {
		name string
		h    Health
		want string
	}{
		// Everything Current.
		{"ready", Health{Ready: true, Total: 5}, "all 5 objects ready"},
		// Few pending objects are all named.
		{"two pending", Health{Total: 5, Pending: pending(2)},
			"2 of 5 objects not ready: Deployment demo/a: Deployment not Available; Deployment demo/b: Deployment not Available"},
		// Beyond three, the rest is counted.
		{"five pending", Health{Total: 6, Pending: pending(5)},
			"5 of 6 objects not ready: Deployment demo/a: Deployment not Available; Deployment demo/b: Deployment not Available; " +
				"Deployment demo/c: Deployment not Available; and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.Summary(); got != tt.want {
				t.Errorf("Summary =\n%s\nwant\n%s", got, tt.want)
			}
			if strings.Count(tt.h.Summary(), ": Deployment not") > summaryLimit {
				t.Errorf("Summary names more than %d objects", summaryLimit)
			}
		})
	}
}
