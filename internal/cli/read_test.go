package cli_test

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/annex-platform/annex/internal/cli"
	"github.com/annex-platform/annex/internal/testenv"
)

// createdAt matches a creation time in JSON or YAML output.
var createdAt = regexp.MustCompile(`("created": "|created: ")[0-9TZ:.-]+`)

// The read commands against a real API server, printed as tables (and
// trees) and as YAML/JSON, compared with golden files under testdata/cli.
func TestReadCommandsGolden(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	now := fleet(t, env.Client).Add(3 * time.Hour)

	print := func(t *testing.T, name string, write func(*bytes.Buffer) error) string {
		t.Helper()
		var out bytes.Buffer
		if err := write(&out); err != nil {
			t.Fatal(err)
		}
		// Creation times come from the API server: golden files hold a
		// placeholder.
		stable := createdAt.ReplaceAll(out.Bytes(), []byte("${1}<created>"))
		golden(t, "cli/"+name, stable)
		return string(stable)
	}
	t.Run("catalog list", func(t *testing.T) {
		cs, err := cli.ListCatalogs(ctx, env.Client)
		if err != nil {
			t.Fatal(err)
		}
		print(t, "catalogs.txt", func(b *bytes.Buffer) error { return cli.WriteCatalogs(b, cli.OutputTable, cs, now) })
		print(t, "catalogs.json", func(b *bytes.Buffer) error { return cli.WriteCatalogs(b, cli.OutputJSON, cs, now) })
	})
	t.Run("search", func(t *testing.T) {
		for _, c := range []struct{ text, file string }{
			{"cert", "search-cert.txt"}, // name, then description matches
			{"", "search-all.txt"},      // every extension
			{"nothing-like-this", "search-none.txt"},
		} {
			ms, err := cli.Search(ctx, env.Client, c.text)
			if err != nil {
				t.Fatal(err)
			}
			print(t, c.file, func(b *bytes.Buffer) error { return cli.WriteMatches(b, cli.OutputTable, ms) })
		}
	})
	t.Run("show", func(t *testing.T) {
		d, err := cli.Show(ctx, env.Client, "podinfo", 0)
		if err != nil {
			t.Fatal(err)
		}
		print(t, "show-podinfo.txt", func(b *bytes.Buffer) error { return cli.WriteExtension(b, cli.OutputTable, d) })
		print(t, "show-podinfo.yaml", func(b *bytes.Buffer) error { return cli.WriteExtension(b, cli.OutputYAML, d) })
		d, err = cli.Show(ctx, env.Client, "cert-manager", 0)
		if err != nil {
			t.Fatal(err)
		}
		print(t, "show-cert-manager.txt", func(b *bytes.Buffer) error { return cli.WriteExtension(b, cli.OutputTable, d) })
		_, err = cli.Show(ctx, env.Client, "nginx", 0)
		if want := `extension "nginx" not found in any catalog; run "annexctl search nginx" or "annexctl catalog list"`; err == nil || err.Error() != want {
			t.Errorf("show of a missing extension: %v, want %s", err, want)
		}
	})
	t.Run("status", func(t *testing.T) {
		all, err := cli.Status(ctx, env.Client, cli.StatusFilter{})
		if err != nil {
			t.Fatal(err)
		}
		// As annexctl status prints it: the summary, then the clusters
		// that need a person first.
		tree := cli.NarrowFleet(all, cli.FleetQuery{})
		text := print(t, "status.txt", func(b *bytes.Buffer) error { return cli.WriteStatus(b, cli.OutputTable, tree, now) })
		print(t, "status.json", func(b *bytes.Buffer) error { return cli.WriteStatus(b, cli.OutputJSON, tree, now) })
		// The installation waiting for a dependency points at what a
		// person can fix: the dependency's invalid values.
		if !strings.Contains(text, "→ dependency platform/cert-manager-eu: ValuesInvalid: values.replicaCount: must be >= 0") {
			t.Errorf("web's action should be its dependency's:\n%s", text)
		}
		if tree.Total != 6 || tree.Ready != 2 || len(tree.Clusters) != 3 {
			t.Errorf("tree: %d installations, %d ready, %d clusters; want 6, 2, 3", tree.Total, tree.Ready, len(tree.Clusters))
		}

		// annexctl status -l env=prod --not-ready: the hub is left out
		// of the summary, the ready installations out of the tree.
		prod, err := cli.ParseSelector("env=prod")
		if err != nil {
			t.Fatal(err)
		}
		print(t, "status-prod-not-ready.txt", func(b *bytes.Buffer) error {
			return cli.WriteStatus(b, cli.OutputTable, cli.NarrowFleet(all, cli.FleetQuery{Selector: prod, NotReady: true}), now)
		})
		// annexctl status --limit 1 -o yaml: the summary still counts
		// every cluster; unlisted says how many are left out.
		limited := cli.LimitClusters(cli.NarrowFleet(all, cli.FleetQuery{}), 1)
		print(t, "status-limit-1.txt", func(b *bytes.Buffer) error { return cli.WriteStatus(b, cli.OutputTable, limited, now) })
		print(t, "status-limit-1.yaml", func(b *bytes.Buffer) error { return cli.WriteStatus(b, cli.OutputYAML, limited, now) })

		tree, err = cli.Status(ctx, env.Client, cli.StatusFilter{Cluster: "prod-eu"})
		if err != nil {
			t.Fatal(err)
		}
		print(t, "status-prod-eu.txt", func(b *bytes.Buffer) error { return cli.WriteStatus(b, cli.OutputTable, tree, now) })
		tree, err = cli.Status(ctx, env.Client, cli.StatusFilter{Name: "podinfo-us"})
		if err != nil {
			t.Fatal(err)
		}
		print(t, "status-podinfo-us.txt", func(b *bytes.Buffer) error { return cli.WriteStatus(b, cli.OutputTable, tree, now) })
		_, err = cli.Status(ctx, env.Client, cli.StatusFilter{Name: "nope", Namespace: "team-a"})
		if want := `no ExtensionInstallation "nope" in namespace team-a; run annexctl status to list them`; err == nil || err.Error() != want {
			t.Errorf("status of a missing installation: %v, want %s", err, want)
		}
	})
	t.Run("events", func(t *testing.T) {
		es, err := cli.Events(ctx, env.Client, cli.EventFilter{Namespace: "team-a"})
		if err != nil {
			t.Fatal(err)
		}
		at := fixtureTime.Add(10 * time.Minute)
		print(t, "events-team-a.txt", func(b *bytes.Buffer) error { return cli.WriteEvents(b, cli.OutputTable, es, at) })
		es, err = cli.Events(ctx, env.Client, cli.EventFilter{Namespace: "team-a", Installation: "podinfo"})
		if err != nil {
			t.Fatal(err)
		}
		print(t, "events-podinfo.yaml", func(b *bytes.Buffer) error { return cli.WriteEvents(b, cli.OutputYAML, es, at) })
	})
}
