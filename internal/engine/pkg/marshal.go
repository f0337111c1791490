package pkg

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MarshalYAMLDocs prints p as three YAML documents, each headed by a
// comment: operator.yaml, params.yaml, and the templates as a map from
// path to the first 12 hex digits of the SHA-256 of the text (equal
// digests show the same text under two paths, as the base/ ones of a
// merged package often are). Fields keep the types' order, map keys are
// sorted, so the bytes depend only on p: golden files and `annexctl
// package render` print packages with it.
func (p *Package) MarshalYAMLDocs() ([]byte, error) {
	var out bytes.Buffer
	digests := make(map[string]string, len(p.Templates))
	for path, text := range p.Templates {
		sum := sha256.Sum256([]byte(text))
		digests[path] = hex.EncodeToString(sum[:])[:12]
	}
	docs := []struct {
		header string
		value  any
	}{
		{"# " + OperatorFile, p.Operator},
		{"# " + ParamsFile, p.Params},
		{"# templates: path: sha256 of the text (first 12 hex digits)", digests},
	}
	for i, d := range docs {
		body, err := blockYAML(d.value)
		if err != nil {
			return nil, fmt.Errorf("print package %s: %w", pkgID(p), err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.WriteString(d.header + "\n")
		out.Write(body)
	}
	return out.Bytes(), nil
}

// blockYAML prints v as block-style YAML by its json tags: JSON keeps the
// field order and omitempty of the types, yaml.v3 nodes keep that order.
func blockYAML(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(j, &doc); err != nil {
		return nil, err
	}
	plainStyle(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// plainStyle drops the flow and quoting styles JSON input has; the
// encoder quotes a string again where plain text would read as another
// type.
func plainStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plainStyle(c)
	}
}
