package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/kubeapis"
)

// PreflightOptions configure Preflight.
type PreflightOptions struct {
	// Cluster is the ManagedCluster about to be upgraded (or downgraded);
	// "" is the hub cluster.
	Cluster string
	// KubeVersion is the version it is going to run.
	KubeVersion string
	Out         io.Writer
}

// ErrPreflightFailed is returned, after the report is printed, when some
// installation has no version for the target Kubernetes version or an
// object that it would no longer serve.
var ErrPreflightFailed = errors.New("preflight found problems")

// Preflight reports, before a cluster moves to another Kubernetes version,
// what each installation would do there — the version it would move to,
// or why none fits — and every object in its inventory whose API version
// the target release no longer serves, with what to use instead. It
// changes nothing.
func Preflight(ctx context.Context, c client.Reader, observe VersionObserver, o PreflightOptions) error {
	if o.KubeVersion == "" {
		return errors.New("--kube-version is required: the version the cluster is going to run")
	}
	po := PlanOptions{Cluster: o.Cluster, KubeVersion: o.KubeVersion, Out: o.Out}
	r, err := solve(ctx, c, observe, po)
	if err != nil {
		return err
	}
	printPlan(o.Out, po, r.observed, r.kubeVersion, r.problem, r.plan)
	insts := r.installations
	type finding struct{ installation, object, api, removedIn, use string }
	var found []finding
	for _, inst := range insts {
		for _, ref := range inst.Status.Inventory {
			r, err := kubeapis.RemovedIn(ref.Group, ref.Version, ref.Kind, o.KubeVersion)
			if err != nil {
				return fmt.Errorf("--kube-version: %w", err)
			}
			if r == nil {
				continue
			}
			api := ref.Version
			if ref.Group != "" {
				api = ref.Group + "/" + ref.Version
			}
			name := ref.Name
			if ref.Namespace != "" {
				name = ref.Namespace + "/" + ref.Name
			}
			found = append(found, finding{inst.Namespace + "/" + inst.Name, ref.Kind + " " + name, api, r.RemovedIn, r.Use})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		return found[i].installation+found[i].object < found[j].installation+found[j].object
	})
	fmt.Fprintln(o.Out)
	if len(found) == 0 {
		fmt.Fprintf(o.Out, "No installed object uses an API version Kubernetes %s removed.\n", o.KubeVersion)
	} else {
		fmt.Fprintf(o.Out, "Installed objects Kubernetes %s no longer serves:\n", o.KubeVersion)
		w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "INSTALLATION\tOBJECT\tAPI VERSION\tREMOVED IN\tUSE")
		for _, f := range found {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", f.installation, f.object, f.api, f.removedIn, f.use)
		}
		_ = w.Flush()
	}
	if len(found) > 0 || len(r.plan.Failed) > 0 {
		return ErrPreflightFailed
	}
	return nil
}
