package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/testenv"
)

// memberCRDsEnv names an environment variable: how many of the large
// chart's CRDs BenchmarkMemberCRDs creates in all (default 384), and
// memberCRDStepEnv how many between two measurements (default 96, 12
// releases).
const (
	memberCRDsEnv    = "ANNEX_BENCH_MEMBER_CRDS"
	memberCRDStepEnv = "ANNEX_BENCH_MEMBER_CRD_STEP"
)

// BenchmarkMemberCRDs measures what the large chart's CRDs cost one
// member API server of the fleet simulation, where every installation's
// 8 CRDs are distinct (their group is the release's): it starts one API
// server, creates the CRDs of one release after another as Annex does
// (a create of each, then a read every 100 ms until it is Established;
// 8 releases at a time), and after each step of memberCRDStepEnv CRDs
// logs the kube-apiserver's and etcd's resident memory and CPU time and
// the step's duration, once every CRD is Established and once the API
// server has settled (under 5 % of a core over 5 s, at most 2 min). It
// reports the slopes: MiB, CPU seconds and seconds per CRD. Run it with
//
//	go test ./test/bench/ -run '^$' -bench '^BenchmarkMemberCRDs$' -benchtime 1x -timeout 60m
func BenchmarkMemberCRDs(b *testing.B) {
	if b.N > 1 {
		b.Fatal("run with -benchtime 1x: one run takes minutes and starts its own API server")
	}
	total, step := envInt(b, memberCRDsEnv, 384), envInt(b, memberCRDStepEnv, 96)
	if step%largeCRDs != 0 || total%step != 0 {
		b.Fatalf("%s=%d and %s=%d: want a step that is a multiple of %d and divides the total", memberCRDsEnv, total, memberCRDStepEnv, step, largeCRDs)
	}
	ctx := b.Context()
	env := testenv.Start(b)
	c, err := client.New(unlimited(env.Config), client.Options{Scheme: env.Scheme})
	must(b, err)
	apiserver, etcd := childProcess(b, "kube-apiserver"), childProcess(b, "etcd")
	templates := largeCRDTemplates(b)

	settle := func() time.Duration {
		start := time.Now()
		for time.Since(start) < 2*time.Minute {
			before := apiserver.cpu(b)
			time.Sleep(5 * time.Second)
			if apiserver.cpu(b)-before < 250*time.Millisecond {
				break
			}
		}
		return time.Since(start)
	}
	settle()
	heapProfile(b, env, "before")
	baseRSS, baseCPU, baseEtcd := apiserver.rss(b), apiserver.cpu(b), etcd.rss(b)
	b.Logf("no large CRD: kube-apiserver RSS %.1f MiB, %.1f CPU s; etcd RSS %.1f MiB; loadavg %s",
		baseRSS, baseCPU.Seconds(), baseEtcd, loadavg())

	var busy time.Duration // the steps' time to Established, settling left out
	b.ResetTimer()
	for done := 0; done < total; done += step {
		cpu0, start := apiserver.cpu(b), time.Now()
		first := done / largeCRDs
		err := parallelOn(8, step/largeCRDs, func(i int) error {
			return createReleaseCRDs(ctx, c, templates, fmt.Sprintf("fleet-0-cluster-%04d", first+i))
		})
		must(b, err)
		took := time.Since(start)
		busy += took
		cpuEstablished, rssEstablished := apiserver.cpu(b), apiserver.rss(b)
		settled := settle()
		cpuSettled, rssSettled := apiserver.cpu(b), apiserver.rss(b)
		b.Logf("%4d CRDs: step Established in %5.1f s, kube-apiserver %5.1f CPU s (%5.1f more settling in %5.1f s); RSS %7.1f MiB Established, %7.1f MiB settled (peak %7.1f); etcd RSS %6.1f MiB, %.1f CPU s; loadavg %s",
			done+step, took.Seconds(), (cpuEstablished - cpu0).Seconds(), (cpuSettled - cpuEstablished).Seconds(), settled.Seconds(),
			rssEstablished, rssSettled, apiserver.peak(b), etcd.rss(b), etcd.cpu(b).Seconds(), loadavg())
	}
	b.StopTimer()
	rss, cpu := apiserver.rss(b), apiserver.cpu(b)
	heapProfile(b, env, "after")
	b.ReportMetric((rss-baseRSS)/float64(total), "apiserver-MiB/crd")
	b.ReportMetric((cpu-baseCPU).Seconds()/float64(total), "apiserver-cpu-s/crd")
	b.ReportMetric(busy.Seconds()/float64(total), "s-established/crd")
	b.ReportMetric(rss, "apiserver-MiB")
	b.ReportMetric(apiserver.peak(b), "apiserver-peak-MiB")
	b.ReportMetric((etcd.rss(b)-baseEtcd)/float64(total), "etcd-MiB/crd")
	b.ReportMetric(load1(), "load1")
}

// memberHeapEnv names an environment variable: when it holds a path
// prefix, BenchmarkMemberCRDs saves the kube-apiserver's heap profile
// (after a GC) before the first CRD as PREFIX-before.pb.gz and after the
// last as PREFIX-after.pb.gz; compare them with
//
//	go tool pprof -sample_index=inuse_space -top -diff_base PREFIX-before.pb.gz PREFIX-after.pb.gz
const memberHeapEnv = "ANNEX_BENCH_APISERVER_HEAP"

// heapProfile saves the API server's heap profile when memberHeapEnv asks
// for it.
func heapProfile(b *testing.B, env *testenv.Env, when string) {
	b.Helper()
	prefix := os.Getenv(memberHeapEnv)
	if prefix == "" {
		return
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	must(b, err)
	data, err := cs.Discovery().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(b.Context())
	must(b, err)
	path := prefix + "-" + when + ".pb.gz"
	must(b, os.WriteFile(path, data, 0o644))
	b.Logf("kube-apiserver heap profile in %s", path)
}

// envInt returns the positive integer in the environment variable name,
// or def when it is not set.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// largeCRDTemplates returns the large chart's CRD templates
// (fleetLargeChart), each still holding {{ .Release.Name }}.
func largeCRDTemplates(b *testing.B) []string {
	b.Helper()
	var out []string
	for path, f := range fleetLargeChart(fleetExtension(0), "1.0.0").Files {
		if strings.HasPrefix(path, "templates/crd-") {
			out = append(out, f)
		}
	}
	if len(out) != largeCRDs {
		b.Fatalf("the large chart has %d CRD templates, want %d", len(out), largeCRDs)
	}
	return out
}

// createReleaseCRDs renders the CRD templates for release, creates them
// as Annex's applier creates an object (field manager annex, strict
// field validation), then reads each every 100 ms until it is
// Established, as the applier waits.
func createReleaseCRDs(ctx context.Context, c client.Client, templates []string, release string) error {
	var crds []*unstructured.Unstructured
	for _, t := range templates {
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(strings.ReplaceAll(t, "{{ .Release.Name }}", release)), &crd.Object); err != nil {
			return err
		}
		if err := c.Create(ctx, crd, client.FieldOwner("annex"), client.FieldValidation("Strict")); err != nil {
			return fmt.Errorf("create CRD %s: %w", crd.GetName(), err)
		}
		crds = append(crds, crd)
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(crd.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, cond := range conds {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established: %w", crd.GetName(), err)
		}
	}
	return nil
}

// process is a child process of this one, measured through /proc.
type process struct {
	name string
	pid  int
}

// childProcess returns the one child of this process whose command is
// name, failing the benchmark unless there is exactly one.
func childProcess(b *testing.B, name string) process {
	b.Helper()
	found, err := childrenNamed(name)
	must(b, err)
	if len(found) != 1 {
		b.Fatalf("found %d %s children of this process, want 1", len(found), name)
	}
	return process{name: name, pid: found[0].pid}
}

// rss returns the process's resident memory (VmRSS), in MiB.
func (p process) rss(b *testing.B) float64 { return p.status(b, "VmRSS") }

// peak returns the process's highest resident memory (VmHWM), in MiB.
func (p process) peak(b *testing.B) float64 { return p.status(b, "VmHWM") }

func (p process) status(b *testing.B, field string) float64 {
	b.Helper()
	status, err := procStatus(p.pid)
	if err != nil {
		b.Fatalf("%s (pid %d): %v", p.name, p.pid, err)
	}
	return mib(status[field])
}

// cpu returns the CPU time (user + system) the process has used so far.
func (p process) cpu(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		b.Fatalf("%s (pid %d): %v", p.name, p.pid, err)
	}
	d, err := parseProcCPU(data)
	if err != nil {
		b.Fatalf("%s: /proc/%d/stat: %v", p.name, p.pid, err)
	}
	return d
}
