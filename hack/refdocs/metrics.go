package refdocs

import (
	"fmt"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Metrics is the table of the metric families named in names, in that
// order, as a registry gathered them: name, type, label names, help and,
// for histograms, the buckets' upper bounds. A vector with no series is
// not gathered, so the caller records one series of each first; a name
// with no family is an error, so that no metric goes undocumented.
func Metrics(families []*dto.MetricFamily, names []string) (string, error) {
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	var rows [][]string
	for _, name := range names {
		f, ok := byName[name]
		if !ok {
			return "", fmt.Errorf("metric %s was not gathered: record one series of it before rendering the reference", name)
		}
		var labels []string
		if len(f.GetMetric()) > 0 {
			for _, l := range f.GetMetric()[0].GetLabel() {
				labels = append(labels, l.GetName())
			}
		}
		help := Inline(f.GetHelp())
		if h := f.GetMetric(); f.GetType() == dto.MetricType_HISTOGRAM && len(h) > 0 {
			var bounds []string
			for _, b := range h[0].GetHistogram().GetBucket() {
				bounds = append(bounds, strconv.FormatFloat(b.GetUpperBound(), 'g', 4, 64))
			}
			help += "<br>Buckets: " + strings.Join(bounds, ", ") + "."
		}
		rows = append(rows, []string{Code(name), strings.ToLower(f.GetType().String()), codeList(labels), help})
	}
	return Table([]string{"Metric", "Type", "Labels", "Help"}, rows), nil
}
