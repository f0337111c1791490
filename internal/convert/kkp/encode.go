package kkp

import (
	"bytes"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// YAML returns the result's objects as one YAML stream, in the order to
// apply them, without the status, the null creationTimestamp and the
// empty maps a typed object marshals with.
func (r *Result) YAML() ([]byte, error) {
	var objs []any
	for _, o := range r.Catalogs {
		objs = append(objs, o)
	}
	for _, o := range r.Profiles {
		objs = append(objs, o)
	}
	for _, o := range r.Installations {
		objs = append(objs, o)
	}
	var out bytes.Buffer
	for i, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		delete(m, "status")
		if meta, ok := m["metadata"].(map[string]any); ok {
			delete(meta, "creationTimestamp")
		}
		pruneEmpty(m)
		b, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

// pruneEmpty removes the empty maps of m, at any depth (the policies a
// typed spec marshals as {}), so the manifests show only what was set.
func pruneEmpty(m map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			pruneEmpty(sub)
			if len(sub) == 0 {
				delete(m, k)
			}
		}
	}
}

// Report says, for people, what did not carry over and which Helm
// releases to adopt, one line each.
func (r *Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "converted: %d Catalogs, %d ExtensionProfiles, %d ExtensionInstallations\n", len(r.Catalogs), len(r.Profiles), len(r.Installations))
	if len(r.Notes) > 0 {
		b.WriteString("not carried over:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	if len(r.Adoptions) > 0 {
		b.WriteString("each installation adopts the Helm release KKP made, in place (spec.adopt.helm), once the Catalogs are synced:\n")
		for _, a := range r.Adoptions {
			fmt.Fprintf(&b, "  - %s: helm release %s in namespace %s\n", a.Installation, a.Release, a.Namespace)
		}
		b.WriteString("Annex takes over the fields of the field managers helm and helm-controller; if KKP's controller wrote the objects under another name (kubectl get -o yaml --show-managed-fields shows it), add it to spec.adopt.helm.fieldManagers.\n")
	}
	return b.String()
}
