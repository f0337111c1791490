package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// result is one system's measurement at one size, for the table
// printTable prints after all benchmarks.
type result struct {
	toReady, toDelete time.Duration
	// peakMiB is the peak resident memory of the manager (annex) or of
	// one CLI process (helm); 0 when not measured (raw).
	peakMiB float64
	// reqPerInstall and writesPerInstall count the requests of the install
	// phase, reqPerDelete those of the uninstall phase.
	reqPerInstall, writesPerInstall, reqPerDelete float64
	// apiInstall and apiDelete are the CPU time kube-apiserver and etcd
	// spent per installation while installing and while uninstalling.
	apiInstall, apiDelete time.Duration
	// idleWritesPerHour is < 0 when not measured.
	idleWritesPerHour float64
	// load is /proc/loadavg at the end of the run.
	load string
}

type crdOutcome struct {
	crds          int
	before, after float64
	load          string
}

var (
	resultsMu sync.Mutex
	results   = map[int]map[string]result{} // by N, then "raw", "proto", "annex", "annex-oci", "annex-signed", "helm"
	crdResult atomic.Pointer[crdOutcome]
)

// report reports the metrics every system has for benchstat (s-to-ready
// is the time to create for raw, which waits for nothing) and keeps r for
// the table.
func report(b *testing.B, n int, system string, r result) {
	b.ReportMetric(r.toReady.Seconds(), "s-to-ready")
	b.ReportMetric(r.toDelete.Seconds(), "s-to-delete")
	b.ReportMetric(r.reqPerInstall, "req/install")
	b.ReportMetric(r.writesPerInstall, "writes/install")
	b.ReportMetric(r.reqPerDelete, "delete-req/install")
	b.ReportMetric(ms(r.apiInstall), "api-ms/install")
	b.ReportMetric(ms(r.apiDelete), "api-ms/delete")
	if r.peakMiB > 0 {
		b.ReportMetric(r.peakMiB, "peak-MiB")
	}
	if r.idleWritesPerHour >= 0 {
		b.ReportMetric(r.idleWritesPerHour, "idle-writes/install/h")
	}
	b.ReportMetric(load1(), "load1")
	record(n, system, r)
}

// record keeps r for the table; a later run of the same system and size
// replaces an earlier one.
func record(n int, system string, r result) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if results[n] == nil {
		results[n] = map[string]result{}
	}
	results[n][system] = r
}

// printTable writes what was recorded as a table: per size, each system's
// times, the factor over the plain client, memory and requests. It writes
// nothing when nothing was recorded. Every line starts with "|" so that
// benchstat does not take it for a configuration line.
func printTable(w io.Writer) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	crd := crdResult.Load()
	if len(results) == 0 && crd == nil {
		return
	}
	if len(results) > 0 {
		fmt.Fprintln(w, "| system benchmark: raw = plain client, 10 workers; annex = `annex manager` (Ready = every installation Ready=True);")
		fmt.Fprintln(w, "| proto = plain client sending Annex's requests for each app, 32 workers like the manager's, no manager (the API server's floor under annex);")
		fmt.Fprintln(w, "| annex-oci = annex with the chart in an OCI registry; annex-signed = the same, signed, the catalog under an Enforce cosign policy")
		fmt.Fprintln(w, "| helm = `helm install` ×N, 10 in parallel, without --wait (no controller makes a Deployment report status here)")
		fmt.Fprintln(w, "| api-ms = CPU milliseconds kube-apiserver and etcd spent per installation, installing (inst) and uninstalling (del)")
		fmt.Fprintf(w, "| %6s %-12s %10s %7s %11s %7s %9s %10s %11s %12s %11s %14s  %s\n",
			"N", "system", "s-to-ready", "x-raw", "s-to-delete", "x-raw", "peak-MiB", "req/inst", "writes/inst", "api-ms/inst", "api-ms/del", "idle-wr/inst/h", "loadavg 1/5/15")
	}
	for _, n := range slices.Sorted(maps.Keys(results)) {
		raw, haveRaw := results[n]["raw"]
		for _, system := range []string{"raw", "proto", "annex", "annex-oci", "annex-signed", "helm"} {
			r, ok := results[n][system]
			if !ok {
				continue
			}
			readyX, deleteX := "-", "-"
			if haveRaw {
				readyX = fmt.Sprintf("%.1f×", r.toReady.Seconds()/raw.toReady.Seconds())
				deleteX = fmt.Sprintf("%.1f×", r.toDelete.Seconds()/raw.toDelete.Seconds())
			}
			fmt.Fprintf(w, "| %6d %-12s %10.2f %7s %11.2f %7s %9s %10.1f %11.1f %12.1f %11.1f %14s  %s\n",
				n, system, r.toReady.Seconds(), readyX, r.toDelete.Seconds(), deleteX,
				optional(r.peakMiB, "%.0f", r.peakMiB > 0), r.reqPerInstall, r.writesPerInstall,
				ms(r.apiInstall), ms(r.apiDelete),
				optional(r.idleWritesPerHour, "%.2f", r.idleWritesPerHour >= 0), r.load)
		}
	}
	if crd != nil {
		fmt.Fprintf(w, "| %d CRDs: manager RSS %.1f MiB before, %.1f MiB after (%+.1f MiB); loadavg %s\n",
			crd.crds, crd.before, crd.after, crd.after-crd.before, crd.load)
	}
	fmt.Fprintln(w, "| targets at N=1000: s-to-ready and s-to-delete ≤ 3× raw; manager peak < 200 MiB; idle writes < 1 per installation per hour")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func optional(v float64, format string, ok bool) string {
	if !ok {
		return "-"
	}
	return strings.TrimSpace(fmt.Sprintf(format, v))
}
