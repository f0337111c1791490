package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// Output is how a read command prints what it found.
type Output string

const (
	// OutputTable is for people: aligned columns (a tree for status).
	OutputTable Output = "table"
	// OutputYAML and OutputJSON print the same view model as the table,
	// for scripts.
	OutputYAML Output = "yaml"
	OutputJSON Output = "json"
)

// Outputs lists the accepted values of -o, for help and completion.
var Outputs = []string{string(OutputTable), string(OutputYAML), string(OutputJSON)}

// ParseOutput reads the value of -o; "" is a table. The error names the
// flag and the values it takes.
func ParseOutput(s string) (Output, error) {
	switch Output(s) {
	case "", OutputTable:
		return OutputTable, nil
	case OutputYAML, OutputJSON:
		return Output(s), nil
	}
	return "", Usagef("-o %q: use one of %s", s, strings.Join(Outputs, ", "))
}

// writeData prints v as YAML or JSON (indented, newline-terminated).
func writeData(w io.Writer, o Output, v any) error {
	switch o {
	case OutputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	case OutputYAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("output %q is not yaml or json", o)
}

// newTable is a tabwriter with kubectl's spacing; call Flush when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
}

// Age prints how long ago t was, in the largest unit only ("5s", "3m",
// "2h", "4d"), so that a table reads the same for a few seconds' skew;
// "<unknown>" for a zero time.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// firstLine cuts s at its first newline and at n runes, marking a cut
// with "…".
func firstLine(s string, n int) string {
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = s[:i], true
	}
	if r := []rune(s); len(r) > n {
		s, cut = string(r[:n]), true
	}
	if cut {
		s += "…"
	}
	return s
}

// roundTrip converts v to out through JSON.
func roundTrip(v, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// WriteData prints any view model as YAML or JSON (-o yaml|json).
func WriteData(w io.Writer, o Output, v any) error { return writeData(w, o, v) }
