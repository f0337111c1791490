// Command apidocs writes the API reference (docs/reference/api.md) from
// the CustomResourceDefinitions controller-gen writes from api/. `make
// generate` runs it after controller-gen:
//
//	go run ./hack/refdocs/apidocs --crds config/crd/bases --out docs/reference/api.md
//
// With --check it writes nothing and fails when the page differs from
// what it would write.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/annex-platform/annex/hack/refdocs"
)

func main() {
	crdDir := flag.String("crds", "config/crd/bases", "folder of the CustomResourceDefinitions")
	out := flag.String("out", "docs/reference/api.md", "the page to write")
	check := flag.Bool("check", false, "write nothing; fail when --out is stale")
	flag.Parse()
	if err := run(*crdDir, *out, !*check); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(crdDir, out string, update bool) error {
	crds, err := refdocs.ReadCRDs(crdDir)
	if err != nil {
		return err
	}
	page := refdocs.Generated("hack/refdocs/apidocs from "+crdDir) + refdocs.API(crds)
	return refdocs.Sync(out, []byte(page), update)
}
