package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/preflight"
)

// PreflightOptions configure Preflight.
type PreflightOptions struct {
	// Cluster is the ManagedCluster about to be upgraded (or downgraded);
	// "" is the hub cluster.
	Cluster string
	// KubeVersion is the version it is going to run.
	KubeVersion string
	// Output is table (the default), yaml or json (a PreflightView).
	Output Output
	Out    io.Writer
}

// ErrPreflightFailed is returned, after the report is printed, when some
// installation has no version for the target Kubernetes version or an
// object that it would no longer serve.
var ErrPreflightFailed = errors.New("preflight found problems")

// Preflight reports, before a cluster moves to another Kubernetes version,
// what each installation would do there — the version it would move to,
// or why none fits — and every object in its inventory whose API version
// the target release no longer serves, with what to use instead; and
// the changes whose CRDs the installation controller refused under
// spec.upgrade.crdPolicy, with each finding, or let through with
// findings. It changes nothing.
func Preflight(ctx context.Context, c client.Reader, observe VersionObserver, o PreflightOptions) error {
	if o.KubeVersion == "" {
		return errors.New("--kube-version is required: the version the cluster is going to run")
	}
	if o.Output == OutputYAML || o.Output == OutputJSON {
		v, err := PreflightData(ctx, c, observe, o)
		if err != nil {
			return err
		}
		if err := writeData(o.Out, o.Output, v); err != nil {
			return err
		}
		if !v.OK {
			return ErrPreflightFailed
		}
		return nil
	}
	po := ResolveOptions{Cluster: o.Cluster, KubeVersion: o.KubeVersion, Out: o.Out}
	r, err := solve(ctx, c, observe, po)
	if err != nil {
		return err
	}
	printResolution(o.Out, po, r.observed, r.kubeVersion, r.problem, r.resolution)
	report := preflight.Report{KubeVersion: o.KubeVersion, Problem: r.problem, Resolution: r.resolution}
	if report.Removed, err = preflight.RemovedObjects(o.KubeVersion, r.installations); err != nil {
		return fmt.Errorf("--kube-version: %w", err)
	}
	fmt.Fprintln(o.Out)
	if len(report.Removed) == 0 {
		fmt.Fprintf(o.Out, "No installed object uses an API version Kubernetes %s removed.\n", o.KubeVersion)
	} else {
		fmt.Fprintf(o.Out, "Installed objects Kubernetes %s no longer serves:\n", o.KubeVersion)
		w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "INSTALLATION\tOBJECT\tAPI VERSION\tREMOVED IN\tUSE")
		for _, f := range report.Removed {
			name := f.Object.Name
			if f.Object.Namespace != "" {
				name = f.Object.Namespace + "/" + name
			}
			fmt.Fprintf(w, "%s\t%s %s\t%s\t%s\t%s\n", f.Installation, f.Object.Kind, name, preflight.APIVersion(f.Object), f.Removal.RemovedIn, f.Removal.Use)
		}
		_ = w.Flush()
	}
	printCRDChanges(o.Out, crdChangesOf(r.installations))
	if !report.OK() {
		return ErrPreflightFailed
	}
	return nil
}
