package helmrepo_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/helm"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

var chartV1 = helmrepo.Chart{
	Name:        "demo",
	Version:     "1.0.0",
	AppVersion:  "1.0",
	KubeVersion: ">=1.28.0-0",
	Description: "demo chart",
	Annotations: map[string]string{"annex.dev/display-name": "Demo"},
	Files: map[string]string{
		"values.yaml":       "message: hi\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
	},
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func TestArchive(t *testing.T) {
	first, err := helmrepo.Archive(chartV1)
	if err != nil {
		t.Fatal(err)
	}
	second, err := helmrepo.Archive(chartV1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Error("two archives of the same chart differ")
	}
	ch, err := loader.LoadArchive(bytes.NewReader(first))
	if err != nil {
		t.Fatalf("helm cannot load the archive: %v", err)
	}
	md := ch.Metadata
	if md.Name != "demo" || md.Version != "1.0.0" || md.AppVersion != "1.0" || md.KubeVersion != ">=1.28.0-0" || md.Annotations["annex.dev/display-name"] != "Demo" || len(ch.Templates) != 1 {
		t.Errorf("helm loaded %+v with %d templates", md, len(ch.Templates))
	}

	if _, err := helmrepo.Archive(helmrepo.Chart{Name: "demo"}); err == nil {
		t.Error("a chart without a version was archived")
	}
}

// TestServer serves a chart, adds another version while running, goes down
// and comes back, and counts the requests.
func TestServer(t *testing.T) {
	repo := helmrepo.NewServer(t, chartV1)

	status, body := get(t, repo.URL()+"/index.yaml")
	if status != http.StatusOK {
		t.Fatalf("index.yaml: status %d", status)
	}
	index, err := helm.ParseIndex(body, repo.URL(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(index.Packages) != 1 || len(index.Packages[0].Spec.Versions) != 1 {
		t.Fatalf("index has %s", body)
	}

	v2 := chartV1
	v2.Version = "2.0.0"
	repo.Add(t, v2)
	_, body = get(t, repo.URL()+"/index.yaml")
	index, err = helm.ParseIndex(body, repo.URL(), "test")
	if err != nil {
		t.Fatal(err)
	}
	versions := index.Packages[0].Spec.Versions
	if len(versions) != 2 || versions[0].Version != "2.0.0" {
		t.Fatalf("after Add the index has %s", body)
	}

	// The archive behind the index URL has the index's digest.
	status, archive := get(t, versions[0].Source.URL)
	if status != http.StatusOK || catalog.Digest(archive) != versions[0].Source.Digest {
		t.Errorf("archive: status %d digest %s, want 200 and %s", status, catalog.Digest(archive), versions[0].Source.Digest)
	}

	repo.SetDown(true)
	if status, _ := get(t, repo.URL()+"/index.yaml"); status != http.StatusServiceUnavailable {
		t.Errorf("down: status %d, want 503", status)
	}
	repo.SetDown(false)
	if status, _ := get(t, repo.URL()+"/nope.tgz"); status != http.StatusNotFound {
		t.Errorf("missing archive: status %d, want 404", status)
	}

	if n := repo.Requests("/index.yaml"); n != 3 {
		t.Errorf("Requests(/index.yaml) = %d, want 3", n)
	}
	if n := repo.Requests("/demo-2.0.0.tgz"); n != 1 {
		t.Errorf("Requests(/demo-2.0.0.tgz) = %d, want 1", n)
	}
}
