package profile

import (
	"encoding/json"
	"strings"
	"text/template"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// clusterVars are what a profile's values may refer to, so that one
// profile serves a fleet: {{ .cluster.name }}, {{ .cluster.labels.region }},
// {{ .cluster.annotations.owner }}, {{ .cluster.kubernetesVersion }}.
type clusterVars map[string]any

func varsOf(c cluster) clusterVars {
	name := c.name
	if name == "" {
		name = hubLabelValue
	}
	labels, annotations := map[string]string{}, map[string]string{}
	for k, v := range c.labels {
		labels[k] = v
	}
	for k, v := range c.annotations {
		annotations[k] = v
	}
	return clusterVars{"cluster": map[string]any{
		"name": name, "labels": labels, "annotations": annotations, "kubernetesVersion": c.version,
	}}
}

// expandValues expands the templates in every string of values (keys
// stay as written). A reference to something the cluster lacks is an
// error, not an empty string.
func expandValues(values *apiextensionsv1.JSON, vars clusterVars) (*apiextensionsv1.JSON, error) {
	if values == nil || len(values.Raw) == 0 || !strings.Contains(string(values.Raw), "{{") {
		return values.DeepCopy(), nil
	}
	var v any
	if err := json.Unmarshal(values.Raw, &v); err != nil {
		return nil, err
	}
	v, err := expandAny(v, vars)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSON{Raw: raw}, nil
}

func expandAny(v any, vars clusterVars) (any, error) {
	switch t := v.(type) {
	case string:
		return expandString(t, vars)
	case map[string]any:
		for k, e := range t {
			x, err := expandAny(e, vars)
			if err != nil {
				return nil, err
			}
			t[k] = x
		}
	case []any:
		for i, e := range t {
			x, err := expandAny(e, vars)
			if err != nil {
				return nil, err
			}
			t[i] = x
		}
	}
	return v, nil
}

// expandString executes s as a Go template over vars when it holds one.
func expandString(s string, vars clusterVars) (string, error) {
	if !strings.Contains(s, "{{") {
		return s, nil
	}
	tmpl, err := template.New("value").Option("missingkey=error").Parse(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, vars); err != nil {
		return "", err
	}
	return b.String(), nil
}
