package installation

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// podSpecPaths are where the kinds that run containers keep their pod
// spec.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// imagesOf returns the container images of objs — containers, init and
// ephemeral containers of Pods and of workloads' pod templates — sorted
// and unique, as written.
func imagesOf(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		path, ok := podSpecPaths[o.GetKind()]
		if !ok {
			continue
		}
		spec, found, _ := unstructured.NestedMap(o.Object, path...)
		if !found {
			continue
		}
		for _, field := range []string{"initContainers", "containers", "ephemeralContainers"} {
			containers, _, _ := unstructured.NestedSlice(spec, field)
			for _, c := range containers {
				if m, ok := c.(map[string]any); ok {
					if image, ok := m["image"].(string); ok && image != "" {
						out = append(out, image)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// maxPlainObjects is the size above which a hook's objects are stored
// gzip-compressed; maxSecretData what one Secret holds.
const (
	maxPlainObjects = 512 << 10
	maxSecretData   = 1000 << 10
)

// encodeObjects returns objs as a YAML stream, and the Secret key it is
// stored under: objects.yaml, or objects.yaml.gz when compressed. A set
// too large for one Secret even compressed is an error.
func encodeObjects(objs []*unstructured.Unstructured) (key string, data []byte, err error) {
	var buf bytes.Buffer
	for _, o := range objs {
		doc, err := yaml.Marshal(o.Object)
		if err != nil {
			return "", nil, err
		}
		buf.WriteString("---\n")
		buf.Write(doc)
	}
	if buf.Len() <= maxPlainObjects {
		return "objects.yaml", buf.Bytes(), nil
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return "", nil, err
	}
	if err := w.Close(); err != nil {
		return "", nil, err
	}
	if gz.Len() > maxSecretData {
		return "", nil, fmt.Errorf("the %d objects take %d bytes compressed, more than one Secret holds", len(objs), gz.Len())
	}
	return "objects.yaml.gz", gz.Bytes(), nil
}
