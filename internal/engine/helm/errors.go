package helm

import (
	"fmt"
	"strings"
)

// ValuesError reports that the effective values do not match the chart's
// values.schema.json (or a subchart's). It is terminal: the user must change
// spec.values or valuesFrom. Render returns it before any template runs.
type ValuesError struct {
	// Extension is Input.ExtensionRef, e.g. "podinfo 6.5.0".
	Extension string
	// Violations lists every problem found, sorted by path then message.
	Violations []Violation
}

// Violation is one field of the values that breaks the schema.
type Violation struct {
	// Path locates the field, e.g. "values.replicas" or "values.ports[0].name".
	Path string
	// Message says what is wrong, with the offending value where known,
	// e.g. "must be >= 0 (got -1)".
	Message string
}

func (v Violation) String() string { return v.Path + ": " + v.Message }

// Error lists one violation per line and ends with a pointer to the schema:
//
//	values.replicas: must be >= 0 (got -1); see extension "podinfo 6.5.0" values schema
func (e *ValuesError) Error() string {
	lines := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		lines[i] = v.String()
	}
	return strings.Join(lines, "\n") + fmt.Sprintf("; see extension %q values schema", e.Extension)
}

// RenderError reports that the chart could not be turned into objects: a
// template failed, a template produced invalid YAML, or a rendered object
// lacks apiVersion, kind or metadata.name. It is terminal for the given chart
// and values.
type RenderError struct {
	// Extension is Input.ExtensionRef.
	Extension string
	// Template is the chart path of the file at fault, e.g.
	// "podinfo/templates/deployment.yaml"; empty when no single file is at fault.
	Template string
	// Message is Helm's message, or what is wrong with the rendered output.
	Message string
}

func (e *RenderError) Error() string {
	// Helm's own messages usually name the file already.
	if e.Template == "" || strings.Contains(e.Message, e.Template) {
		return fmt.Sprintf("render extension %q: %s", e.Extension, e.Message)
	}
	return fmt.Sprintf("render extension %q: %s: %s", e.Extension, e.Template, e.Message)
}

// ArchiveError reports that the chart archive cannot be used: it is not a
// gzipped tar, has no valid Chart.yaml, misses a declared subchart, is a
// library chart, or carries a values.schema.json that cannot be compiled.
// The artifact itself must be fixed; retrying with the same bytes fails again.
type ArchiveError struct {
	// Extension is Input.ExtensionRef.
	Extension string
	// Err is the underlying cause.
	Err error
}

func (e *ArchiveError) Error() string {
	return fmt.Sprintf("load chart of extension %q: %v", e.Extension, e.Err)
}

func (e *ArchiveError) Unwrap() error { return e.Err }
