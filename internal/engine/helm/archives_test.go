package helm

import (
	"reflect"
	"testing"

	"helm.sh/helm/v4/pkg/chart/loader/archive"
)

// TestRenderReusesCheckedArchive renders one archive (with a subchart that
// values enable and disable) several times in a row, its files kept by
// checkedArchives, and checks each result against a render of the same
// input with nothing kept: what one render drops from its chart does not
// reach the next.
func TestRenderReusesCheckedArchive(t *testing.T) {
	files := with(podinfo, map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: podinfo\nversion: 6.5.0\ndependencies:\n  - name: redis\n    version: 1.0.0\n    condition: redis.enabled\n",
		"values.yaml":            podinfo["values.yaml"] + "redis:\n  enabled: true\n",
		"charts/redis-1.0.0.tgz": redisChart(t),
	})
	archiveBytes := input(t, files, nil).Archive
	for i, vals := range []map[string]any{
		{"redis": map[string]any{"enabled": false}},
		{"redis": map[string]any{"port": 7000}},
		nil,
		{"redis": map[string]any{"enabled": false}},
	} {
		in := input(t, files, vals)
		in.Archive = archiveBytes
		checkedArchives = &archiveFiles{max: 64 << 20}
		want, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 { // the archive kept from the render above, then from this one
			got, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("values %d, round %d: the render from kept files differs from a fresh one", i, round)
			}
		}
	}
}

// TestArchiveFilesBound checks that the cache keeps at most max bytes,
// dropping the least recently used archive first, and never keeps an
// archive bigger than max.
func TestArchiveFilesBound(t *testing.T) {
	c := &archiveFiles{max: 100}
	file := func(n int) []*archive.BufferedFile {
		return []*archive.BufferedFile{{Name: "f", Data: make([]byte, n-1)}}
	}
	sum := func(i int) digest { return digest{byte(i)} }
	c.put(sum(1), file(40))
	c.put(sum(2), file(40))
	if _, ok := c.get(sum(1)); !ok { // 1 is now the most recently used
		t.Fatal("archive 1 not kept")
	}
	c.put(sum(3), file(40)) // past 100 bytes: 2 goes
	for i, want := range map[int]bool{1: true, 2: false, 3: true} {
		if _, ok := c.get(sum(i)); ok != want {
			t.Errorf("archive %d kept = %v, want %v", i, ok, want)
		}
	}
	c.put(sum(4), file(101))
	if _, ok := c.get(sum(4)); ok || c.size > c.max {
		t.Errorf("an archive over the bound was kept (size %d)", c.size)
	}
	if c.size != 80 {
		t.Errorf("size = %d, want 80", c.size)
	}
}
