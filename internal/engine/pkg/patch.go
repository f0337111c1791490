package pkg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// A patch file (a Task's Patches entry, a template rendered with the
// task's data) holds one or more YAML documents, each one patch, told
// apart by content.
//
// A strategic-merge patch is an object with apiVersion, kind and
// metadata.name. It applies to the task's objects of that kind and name
// (and namespace, when the patch sets one), with the strategic merge of
// Kubernetes for built-in kinds and a JSON merge patch (RFC 7386) for
// others, as kustomize does. `$patch: delete` at its top removes the
// object.
//
// A JSON 6902 patch takes kustomize's shape, a target and the
// operations, as a list or as a text holding one (YAML or JSON):
//
//	target: {kind: StatefulSet, name: db, namespace: optional}
//	patch:
//	  - {op: replace, path: /spec/replicas, value: 3}
//
// A bare list of operations is refused: it does not say which object it
// patches.
type objectPatch struct {
	file                  string
	kind, name, namespace string
	// strategic is the strategic-merge patch as JSON, or ops the JSON
	// 6902 operations.
	strategic []byte
	ops       jsonpatch.Patch
}

// patch applies t's patches, file by file and document by document, to
// objs. A patch matching none of them is a warning, not silence.
func (r *planRenderer) patch(t Task, objs []*unstructured.Unstructured, data map[string]any) ([]*unstructured.Unstructured, error) {
	for _, file := range t.Patches {
		text, err := r.execute(t.Name, file, data)
		if err != nil {
			return nil, err
		}
		docs, err := parseDocuments(text)
		if err != nil {
			return nil, &RenderError{Plan: r.plan, Task: t.Name, Template: file, Err: err}
		}
		for i, doc := range docs {
			p, err := readPatch(file, doc)
			if err != nil {
				return nil, &RenderError{Plan: r.plan, Task: t.Name, Template: file, Err: fmt.Errorf("document %d (output line %d): %w", i+1, doc.line, err)}
			}
			var kept []*unstructured.Unstructured
			matched := false
			for _, obj := range objs {
				if !p.matches(obj) {
					kept = append(kept, obj)
					continue
				}
				matched = true
				patched, err := p.apply(obj)
				if err != nil {
					return nil, &RenderError{Plan: r.plan, Task: t.Name, Template: file, Err: fmt.Errorf("patching %s %s: %w", p.kind, p.name, err)}
				}
				if patched != nil {
					kept = append(kept, patched)
				}
			}
			objs = kept
			if !matched {
				r.warnings = append(r.warnings, fmt.Sprintf(
					"task %s: patch %s matches no resource (kind %s, name %s); check its kind and name against the objects of the task's resources",
					t.Name, file, p.kind, p.name))
			}
		}
	}
	return objs, nil
}

// readPatch tells a document's patch shape.
func readPatch(file string, doc document) (*objectPatch, error) {
	m, ok := doc.value.(map[string]any)
	if !ok {
		if _, isList := doc.value.([]any); isList {
			return nil, errors.New("is a JSON 6902 patch without a target; write `target: {kind: <kind>, name: <name>}` and put the operations under `patch:`")
		}
		return nil, fmt.Errorf("is %s; a patch is a strategic-merge patch object or a JSON 6902 patch with a target", describeValue(doc.value))
	}
	p := &objectPatch{file: file}
	if target, ok := m["target"]; ok {
		return p, p.read6902(target, m)
	}
	obj := &unstructured.Unstructured{Object: m}
	p.kind, p.name, p.namespace = obj.GetKind(), obj.GetName(), obj.GetNamespace()
	if obj.GetAPIVersion() == "" || p.kind == "" || p.name == "" {
		return nil, errors.New("is neither a strategic-merge patch (an object with apiVersion, kind and metadata.name) nor a JSON 6902 patch (target: {kind, name} and patch: [operations])")
	}
	var err error
	p.strategic, err = json.Marshal(m)
	return p, err
}

func (p *objectPatch) read6902(target any, m map[string]any) error {
	for key := range m {
		if key != "target" && key != "patch" {
			return fmt.Errorf("a JSON 6902 patch has only target and patch; remove %q", key)
		}
	}
	t, ok := target.(map[string]any)
	if ok {
		p.kind, _ = t["kind"].(string)
		p.name, _ = t["name"].(string)
		p.namespace, _ = t["namespace"].(string)
	}
	if p.kind == "" || p.name == "" {
		return errors.New("target needs kind and name: write `target: {kind: <kind>, name: <name>}`")
	}
	ops := m["patch"]
	if text, isText := ops.(string); isText {
		var parsed any
		if err := yaml.Unmarshal([]byte(text), &parsed); err != nil {
			return fmt.Errorf("patch text is not YAML or JSON: %v", err)
		}
		ops = parsed
	}
	if _, isList := ops.([]any); !isList {
		return errors.New("patch must be a list of operations such as `- {op: replace, path: /spec/replicas, value: 3}`")
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	p.ops, err = jsonpatch.DecodePatch(data)
	if err != nil {
		return fmt.Errorf("patch operations are invalid: %v", err)
	}
	return nil
}

func (p *objectPatch) matches(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == p.kind && obj.GetName() == p.name &&
		(p.namespace == "" || obj.GetNamespace() == p.namespace)
}

// apply returns the patched object, nil when the patch deleted it.
func (p *objectPatch) apply(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	original, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var patched []byte
	switch {
	case p.ops != nil:
		patched, err = p.ops.Apply(original)
	default:
		if typed, schemeErr := scheme.Scheme.New(obj.GroupVersionKind()); schemeErr == nil {
			patched, err = strategicpatch.StrategicMergePatch(original, p.strategic, typed)
		} else {
			patched, err = jsonpatch.MergePatch(original, p.strategic)
		}
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(patched))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return &unstructured.Unstructured{Object: jsonNumbers(m).(map[string]any)}, nil
}
