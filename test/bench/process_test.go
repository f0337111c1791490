package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/annex-platform/annex/internal/testenv"
)

// binaries are built once per test binary into binDir, which TestMain
// removes.
var (
	binDir     string
	buildOnce  = map[string]*sync.Once{"annex": {}, "helm": {}}
	buildError = map[string]error{}
	buildMu    sync.Mutex
)

// binary builds (once) and returns the path of "annex" (./cmd/annex) or
// "helm" (helm.sh/helm/v4/cmd/helm, the version go.mod pins).
func binary(b *testing.B, name string) string {
	b.Helper()
	pkg := map[string]string{
		"annex": "./cmd/annex",
		"helm":  "helm.sh/helm/v4/cmd/helm",
	}[name]
	path := filepath.Join(binDir, name)
	buildOnce[name].Do(func() {
		root, err := testenv.RepoRoot()
		if err == nil {
			cmd := exec.Command("go", "build", "-o", path, pkg)
			cmd.Dir = root
			var out []byte
			if out, err = cmd.CombinedOutput(); err != nil {
				err = fmt.Errorf("go build -o %s %s: %w\n%s", path, pkg, err, out)
			}
		}
		buildMu.Lock()
		buildError[name] = err
		buildMu.Unlock()
	})
	buildMu.Lock()
	defer buildMu.Unlock()
	if err := buildError[name]; err != nil {
		b.Fatal(err)
	}
	return path
}

// manager is `annex manager` running as a subprocess, with its resident
// memory sampled every 100 ms.
type manager struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the sampler ends

	mu      sync.Mutex
	peakKiB uint64 // highest VmRSS sampled
}

// cpuProfileEnv names an environment variable: when it holds a file
// name, the manager writes a CPU profile there (--cpu-profile; one per run:
// a later run overwrites it).
const cpuProfileEnv = "ANNEX_BENCH_CPUPROFILE"

// pprofEnv names an environment variable: when it holds an address
// (127.0.0.1:6060), the manager serves Go's /debug/pprof there
// (--pprof-bind-address), so that a phase of a long run can be profiled
// while it runs (go tool pprof -seconds 30 http://ADDR/debug/pprof/profile).
// A SIGKILLed manager writes no --cpu-profile; this one needs no exit.
const pprofEnv = "ANNEX_BENCH_PPROF"

// managerMemLimitEnv names an environment variable: when it holds a Go
// memory limit (230MiB), the manager runs with it as GOMEMLIMIT, and
// nothing else of the benchmark does (setting GOMEMLIMIT for go test
// would limit its API servers too).
const managerMemLimitEnv = "ANNEX_BENCH_MANAGER_GOMEMLIMIT"

// startManager runs `annex manager` with the kubeconfig at kubeconfig,
// its cache under work, and stops it on b.Cleanup (printing the tail of
// its log when the benchmark failed). Flags in extra come last and so
// override the defaults (e.g. "--metrics-bind-address", addr).
func startManager(b *testing.B, work, kubeconfig string, extra ...string) *manager {
	b.Helper()
	m := &manager{log: filepath.Join(work, "manager.log"), done: make(chan struct{})}
	logFile, err := os.Create(m.log)
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"manager", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	if profile := os.Getenv(cpuProfileEnv); profile != "" {
		args = append(args, "--cpu-profile", profile)
		b.Logf("manager CPU profile in %s", profile)
	}
	if addr := os.Getenv(pprofEnv); addr != "" {
		args = append(args, "--pprof-bind-address", addr)
		b.Logf("manager pprof at http://%s/debug/pprof", addr)
	}
	args = append(args, extra...)
	m.cmd = exec.Command(binary(b, "annex"), args...)
	m.cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "XDG_CACHE_HOME="+filepath.Join(work, "cache"))
	if limit := os.Getenv(managerMemLimitEnv); limit != "" {
		m.cmd.Env = append(m.cmd.Env, "GOMEMLIMIT="+limit)
		b.Logf("manager GOMEMLIMIT=%s", limit)
	}
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	if err := m.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go m.sample()
	b.Cleanup(func() {
		m.stop(b)
		_ = logFile.Close()
		if b.Failed() {
			data, _ := os.ReadFile(m.log)
			if len(data) > 8000 {
				data = data[len(data)-8000:]
			}
			b.Logf("manager log (tail):\n%s", data)
		}
	})
	return m
}

func (m *manager) sample() {
	defer close(m.done)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		status, err := procStatus(m.cmd.Process.Pid)
		if err != nil {
			return // the process has ended
		}
		m.mu.Lock()
		m.peakKiB = max(m.peakKiB, status["VmRSS"])
		m.mu.Unlock()
	}
}

// RSS returns the manager's resident memory now, in MiB.
func (m *manager) RSS(b *testing.B) float64 {
	b.Helper()
	status, err := procStatus(m.cmd.Process.Pid)
	if err != nil {
		b.Fatalf("manager: %v", err)
	}
	return mib(status["VmRSS"])
}

// Peak returns the highest resident memory of the manager so far, in MiB:
// the kernel's high-water mark (VmHWM), or the highest 100 ms sample when
// that is larger.
func (m *manager) Peak(b *testing.B) float64 {
	b.Helper()
	status, err := procStatus(m.cmd.Process.Pid)
	if err != nil {
		b.Fatalf("manager: %v", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return mib(max(status["VmHWM"], m.peakKiB))
}

// CPU returns the CPU time (user + system) the manager has used so far.
func (m *manager) CPU(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("manager: %v", err)
	}
	d, err := parseProcCPU(data)
	if err != nil {
		b.Fatalf("manager: /proc/%d/stat: %v", m.cmd.Process.Pid, err)
	}
	return d
}

// stop sends SIGTERM and escalates to SIGKILL after 30 s.
func (m *manager) stop(b *testing.B) {
	if err := testenv.StopProcess(m.cmd, 30*time.Second); err != nil {
		b.Error(err)
	}
	<-m.done
}

// procStatus reads /proc/<pid>/status.
func procStatus(pid int) (map[string]uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	return parseProcStatus(data), nil
}

// parseProcStatus returns the fields of /proc/<pid>/status measured in
// kB (VmRSS, VmHWM, ...), in KiB.
func parseProcStatus(data []byte) map[string]uint64 {
	out := map[string]uint64{}
	for line := range bytes.Lines(data) {
		key, value, ok := strings.Cut(string(line), ":")
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(strings.TrimSpace(value), " kB")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 64); err == nil {
			out[key] = n
		}
	}
	return out
}

// parseProcCPU returns utime + stime of /proc/<pid>/stat. Linux reports
// them in USER_HZ, which is 100 on every architecture.
func parseProcCPU(data []byte) (time.Duration, error) {
	// The command name may hold spaces and parentheses; the fields after
	// the last ")" start with the state (field 3).
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("no ')' after the command name")
	}
	fields := strings.Fields(string(data[i+1:]))
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("%d fields after the command name, want more than %d", len(fields), stime)
	}
	var ticks uint64
	for _, f := range []string{fields[utime], fields[stime]} {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

func mib(kib uint64) float64 { return float64(kib) / 1024 }

// loadavg returns the first three fields of /proc/loadavg: the load over
// 1, 5 and 15 minutes, which says how busy the shared machine was.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// load1 returns the load over the last minute.
func load1() float64 {
	f := strings.Fields(loadavg())
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// controlPlaneCPU returns the CPU time (user + system) that this process's
// kube-apiserver and etcd children have used so far: what the requests of
// the system under test cost the cluster, whichever client sent them.
func controlPlaneCPU(b *testing.B) time.Duration {
	b.Helper()
	children, err := childrenNamed("kube-apiserver", "etcd")
	if err != nil {
		b.Fatalf("control plane CPU: %v", err)
	}
	if len(children) != 2 {
		b.Fatalf("control plane CPU: found %d kube-apiserver and etcd children of this process, want 2", len(children))
	}
	var total time.Duration
	for _, c := range children {
		cpu, err := parseProcCPU(c.stat)
		if err != nil {
			b.Fatalf("control plane CPU: /proc/%d/stat: %v", c.pid, err)
		}
		total += cpu
	}
	return total
}

// child is a child process of this one as /proc/PID/stat showed it.
type child struct {
	pid  int
	stat []byte
}

// childrenNamed returns this process's children whose command is one of
// names, with their /proc/PID/stat as read.
func childrenNamed(names ...string) ([]child, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var found []child
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // ended meanwhile
		}
		if comm, ppid, ok := procParent(data); ok && ppid == self && slices.Contains(names, comm) {
			found = append(found, child{pid: pid, stat: data})
		}
	}
	return found, nil
}

// procParent returns the command name and parent process ID from the
// contents of /proc/<pid>/stat.
func procParent(data []byte) (comm string, ppid int, ok bool) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1]) // field 4; fields[0] is the state
	if err != nil {
		return "", 0, false
	}
	return string(data[open+1 : end]), ppid, true
}
