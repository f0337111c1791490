package exampleoperator

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetStatus(t *testing.T) {
	v1, v2 := behaviour{}, behaviour{recordVersion: true}
	cases := []struct {
		name      string
		p         published
		version   string
		bh        behaviour
		status    metav1.ConditionStatus
		reason    string
		message   string
		observed  int64 // status.observedGeneration after; the Banner is at generation 3, was at 2
		configMap string
	}{
		// 0.1.0: Ready names the ConfigMap, nothing more.
		{"created by 0.1.0", published{configMap: "hello-banner"}, "0.1.0", v1,
			metav1.ConditionTrue, ReasonCreated, "ConfigMap hello-banner holds the message", 3, ""},
		// 0.2.0 also names its version and records the ConfigMap's name.
		{"created by 0.2.0", published{configMap: "hello-banner"}, "0.2.0", v2,
			metav1.ConditionTrue, ReasonCreated, "ConfigMap hello-banner holds the message (example-operator 0.2.0)", 3, "hello-banner"},
		// A ConfigMap in the way is terminal until the user acts:
		// observedGeneration moves, and the message says what to do.
		{"conflict", published{configMap: "hello-banner", conflict: true}, "0.2.0", v2,
			metav1.ConditionFalse, ReasonConflict, "ConfigMap hello-banner exists and this Banner does not control it; delete that ConfigMap (kubectl delete configmap hello-banner -n team-a) or give the Banner another name", 3, ""},
		// A refused write is retried: observedGeneration stays.
		{"failed", published{configMap: "hello-banner", err: errors.New("forbidden")}, "0.2.0", v2,
			metav1.ConditionFalse, ReasonFailed, "cannot write ConfigMap hello-banner: forbidden", 2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &Banner{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "team-a", Generation: 3}}
			b.Status.ObservedGeneration, b.Status.ConfigMapName = 2, "hello-banner"
			setStatus(b, tc.p, tc.version, tc.bh)
			c := meta.FindStatusCondition(b.Status.Conditions, ConditionReady)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 3 {
				t.Errorf("Ready = %+v, want %s %s %q at generation 3", c, tc.status, tc.reason, tc.message)
			}
			if b.Status.ObservedGeneration != tc.observed || b.Status.ConfigMapName != tc.configMap {
				t.Errorf("observedGeneration %d, configMapName %q; want %d, %q", b.Status.ObservedGeneration, b.Status.ConfigMapName, tc.observed, tc.configMap)
			}
		})
	}
}

func TestBehaviourOf(t *testing.T) {
	for version, want := range map[string]behaviour{
		"0.1.0": {}, "0.1.9": {}, "0.2.0": {recordVersion: true}, "v0.3.0": {recordVersion: true},
		"0.4.0": {recordVersion: true, webhooks: true}, "1.0.0": {recordVersion: true, webhooks: true},
	} {
		b, err := behaviourOf(version)
		if err != nil || b != want {
			t.Errorf("behaviourOf(%s) = %+v, %v; want %+v", version, b, err, want)
		}
	}
	if _, err := behaviourOf("latest"); err == nil {
		t.Error("behaviourOf(latest) accepted a version that is not semver")
	}
}
