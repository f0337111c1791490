package catalog

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/archive"
)

// MaxValuesBytes bounds what ReadChartValues returns of one chart: its
// values schema and its values.yaml, both as compact JSON. They are
// written into an Extension's status, which shares etcd's object size
// limit with the other versions asked for.
const MaxValuesBytes = 256 << 10

// ChartValues is what a chart archive says about its values.
type ChartValues struct {
	// Schema is values.schema.json as compact JSON; nil when the chart
	// has none.
	Schema []byte
	// Defaults is values.yaml as JSON (a mapping); nil when the chart has
	// none or it is empty.
	Defaults []byte
}

// ReadChartValues reads values.schema.json and values.yaml from the chart
// folder of a chart archive (.tgz), after CheckArchive has walked it with
// lim: those of subcharts (charts/<sub>/values.yaml) are not the chart's.
// Errors are *UnsafeArchiveError (the archive is refused), or a plain
// error naming the file that is not valid JSON or YAML, is not a mapping,
// or makes more than MaxValuesBytes together with the other.
func ReadChartValues(archive []byte, lim Limits) (ChartValues, error) {
	if err := CheckArchive(archive, lim); err != nil {
		return ChartValues{}, err
	}
	schema, values, err := chartValuesFiles(archive)
	if err != nil {
		return ChartValues{}, err
	}
	var out ChartValues
	if schema != nil {
		var compact bytes.Buffer
		if err := json.Compact(&compact, schema); err != nil {
			return ChartValues{}, fmt.Errorf("values.schema.json is not JSON: %w", err)
		}
		var root map[string]any
		if err := json.Unmarshal(compact.Bytes(), &root); err != nil {
			return ChartValues{}, errors.New("values.schema.json is not a JSON object; a values schema is an object with properties")
		}
		out.Schema = compact.Bytes()
	}
	if values != nil {
		var defaults map[string]any
		if err := yaml.Unmarshal(values, &defaults); err != nil {
			return ChartValues{}, fmt.Errorf("values.yaml is not a YAML mapping: %w", err)
		}
		if len(defaults) > 0 {
			if out.Defaults, err = json.Marshal(defaults); err != nil {
				return ChartValues{}, fmt.Errorf("values.yaml: %w", err)
			}
		}
	}
	if n := len(out.Schema) + len(out.Defaults); n > MaxValuesBytes {
		return ChartValues{}, fmt.Errorf("values.schema.json and values.yaml are %d KiB as JSON, more than the %d KiB Annex shows; read them in the chart", n>>10, MaxValuesBytes>>10)
	}
	return out, nil
}

// chartValuesFiles returns <chart>/values.schema.json and
// <chart>/values.yaml of a checked archive, nil for a missing one.
func chartValuesFiles(data []byte) (schema, values []byte, err error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("chart archive is not gzip-compressed: %w", err)
	}
	// CheckArchive bounded every file to MaxFileBytes: no limits here.
	err = archive.Walk(zr, archive.Limits{}, func(e *archive.Entry) error {
		if e.Header.Typeflag != tar.TypeReg {
			return nil
		}
		var into *[]byte
		switch _, rest, _ := strings.Cut(archive.TrimDotSlash(e.Header.Name), "/"); rest {
		case "values.schema.json":
			into = &schema
		case "values.yaml":
			into = &values
		default:
			return nil
		}
		var err error
		*into, err = e.ReadAll()
		return err
	})
	if err != nil {
		return nil, nil, archive.NotValidTar("chart archive", err)
	}
	return schema, values, nil
}

// RequestedVersions reads the annotation annex.dev/values-requested: the
// versions it lists, comma separated, without blanks or repeats.
func RequestedVersions(annotation string) []string {
	var out []string
	for v := range strings.SplitSeq(annotation, ",") {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// CurrentValues returns the status.values entry of version when it belongs to
// the content the Extension offers now: its digest is the version's
// source.digest (a version without a digest accepts any entry).
func CurrentValues(ext *v1alpha1.Extension, version string) (*v1alpha1.VersionValues, bool) {
	i := slices.IndexFunc(ext.Status.Values, func(e v1alpha1.VersionValues) bool { return e.Version == version })
	if i < 0 {
		return nil, false
	}
	e := &ext.Status.Values[i]
	for _, v := range ext.Spec.Versions {
		if v.Version == version {
			return e, v.Source.Digest == "" || v.Source.Digest == e.Digest
		}
	}
	return e, false
}

// RememberValues puts entry first in values, replacing the entry of its version,
// and keeps at most v1alpha1.MaxVersionValues.
func RememberValues(values []v1alpha1.VersionValues, entry v1alpha1.VersionValues) []v1alpha1.VersionValues {
	out := []v1alpha1.VersionValues{entry}
	for _, e := range values {
		if e.Version != entry.Version && len(out) < v1alpha1.MaxVersionValues {
			out = append(out, e)
		}
	}
	return out
}

// AddRequestedVersion returns the annotation annex.dev/values-requested
// with version added (once).
func AddRequestedVersion(annotation, version string) string {
	return strings.Join(RequestedVersions(annotation+","+version), ",")
}
