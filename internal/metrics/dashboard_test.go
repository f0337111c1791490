package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard the test reads.
type dashboard struct {
	Title  string `json:"title"`
	UID    string `json:"uid"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// metricName matches what can only be a metric name in the dashboard's
// queries: Annex's, controller-runtime's and client-go's prefixes.
var metricName = regexp.MustCompile(`\b(?:annex|controller_runtime|workqueue|rest_client)_[a-z0-9_]+`)

// TestDashboardQueriesRegisteredMetrics reads config/grafana's dashboard:
// it must parse, every panel must query something, every metric it
// queries must be one Annex registers (so that a renamed metric breaks
// this test, not the dashboard), and every metric Annex registers must be
// on it.
func TestDashboardQueriesRegisteredMetrics(t *testing.T) {
	data, err := os.ReadFile("../../config/grafana/annex-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("config/grafana/annex-dashboard.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels: %q %q %d", d.Title, d.UID, len(d.Panels))
	}
	registered := Names()
	used := map[string]bool{}
	check := func(where, expr string) {
		for _, m := range metricName.FindAllString(expr, -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !slices.Contains(registered, base) {
				t.Errorf("%s queries %s, which Annex does not register (registered: %v)", where, m, registered)
			}
			used[base] = true
		}
	}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			check("panel "+p.Title, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		check("variable "+v.Name, v.Definition)
	}
	for _, name := range registered {
		if !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
}
