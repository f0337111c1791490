package profile

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestExpandValues(t *testing.T) {
	vars := varsOf(cluster{name: "edge-1", labels: map[string]string{"region": "eu"}, annotations: map[string]string{"owner": "team-a"}, version: "v1.36.4"})
	for _, tc := range []struct {
		name, in, want, wantErr string
	}{
		// Strings anywhere in the values, keys left alone.
		{"nested", `{"ssh":{"keysFrom":"{{ .cluster.name }}-keys"},"list":["{{ .cluster.labels.region }}",1,true]}`,
			`{"list":["eu",1,true],"ssh":{"keysFrom":"edge-1-keys"}}`, ""},
		// Annotations and the Kubernetes version.
		{"more", `{"owner":"{{ .cluster.annotations.owner }}","kube":"{{ .cluster.kubernetesVersion }}"}`,
			`{"kube":"v1.36.4","owner":"team-a"}`, ""},
		// No template: the values as they are.
		{"plain", `{"a":"b"}`, `{"a":"b"}`, ""},
		// A label the cluster lacks is an error, not an empty string.
		{"missing", `{"zone":"{{ .cluster.labels.zone }}"}`, "", `map has no entry for key "zone"`},
		// A template that does not parse.
		{"broken", `{"a":"{{ .cluster.name "}`, "", "unclosed action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := expandValues(&apiextensionsv1.JSON{Raw: []byte(tc.in)}, vars)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got.Raw) != tc.want {
				t.Fatalf("got %s (%v), want %s", got.Raw, err, tc.want)
			}
		})
	}
}

// One profile serves a fleet: each cluster's installation gets its own
// expansion; values that do not expand on some cluster are reported, and
// nothing is created there.
func TestDecideExpandsPerCluster(t *testing.T) {
	p := profileOf("base", 0, v1alpha1.ProfileModeEnforced, "hello")
	p.Spec.Extensions[0].Values = &apiextensionsv1.JSON{Raw: []byte(`{"region":"{{ .cluster.labels.region }}"}`)}
	eu := cluster{name: "eu-1", labels: map[string]string{"env": "prod", "region": "eu"}}
	bare := cluster{name: "bare", labels: map[string]string{"env": "prod"}}
	decided := decide(&p, []v1alpha1.ExtensionProfile{p}, []cluster{eu, bare}, nil, allAtOnce(&p, []cluster{eu, bare}))
	if got := kinds(decided); len(got) != 2 || got[0] != "create:hello-eu-1" || got[1] != "revision:eu-1@1" {
		t.Fatalf("actions %v, want only hello-eu-1 created and eu-1's record", got)
	}
	spec, err := desiredSpec(&p, decided.actions[0].want)
	if err != nil || string(spec.Values.Raw) != `{"region":"eu"}` {
		t.Fatalf("values %s (%v)", spec.Values.Raw, err)
	}
	if msg := decided.invalid["hello"]; !strings.Contains(msg, "spec.extensions[hello].values") || !strings.Contains(msg, "region") {
		t.Fatalf("invalid %v: want the field and the missing label", decided.invalid)
	}
}
