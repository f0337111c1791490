package memlimit

import (
	"io/fs"
	"runtime/debug"
	"testing"
)

func TestCgroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{{
		name: "v2 container: its own cgroup is the namespace's root",
		files: map[string]string{
			"/proc/self/cgroup":         "0::/\n",
			"/sys/fs/cgroup/memory.max": "536870912\n",
		},
		want: 512 << 20, ok: true,
	}, {
		name: "v2 without a cgroup namespace: the process's own cgroup",
		files: map[string]string{
			"/proc/self/cgroup":                             "0::/kubepods/pod1/annex\n",
			"/sys/fs/cgroup/kubepods/pod1/annex/memory.max": "268435456\n",
		},
		want: 256 << 20, ok: true,
	}, {
		name: "v2 without a limit",
		files: map[string]string{
			"/proc/self/cgroup":         "0::/\n",
			"/sys/fs/cgroup/memory.max": "max\n",
		},
	}, {
		name: "v1: the memory controller's cgroup",
		files: map[string]string{
			"/proc/self/cgroup": "5:cpu,cpuacct:/x\n4:memory:/kubepods/pod1\n0::/\n",
			"/sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes": "1073741824",
		},
		want: 1 << 30, ok: true,
	}, {
		name: "v1 namespaced: the mount's root",
		files: map[string]string{
			"/proc/self/cgroup":                           "4:memory:/process_api/51a8\n0::/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "134217728\n",
		},
		want: 128 << 20, ok: true,
	}, {
		name: "v1 without a limit (page-rounded MaxInt64)",
		files: map[string]string{
			"/proc/self/cgroup":                           "4:memory:/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		},
	}, {
		name:  "no cgroup files at all",
		files: map[string]string{},
	}, {
		name: "garbage is no limit",
		files: map[string]string{
			"/proc/self/cgroup":         "0::/\n",
			"/sys/fs/cgroup/memory.max": "lots\n",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			read := func(name string) ([]byte, error) {
				if data, ok := tc.files[name]; ok {
					return []byte(data), nil
				}
				return nil, fs.ErrNotExist
			}
			got, ok := Cgroup(read)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Cgroup = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestApplyLeavesGOMEMLIMIT(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	before := debug.SetMemoryLimit(-1)
	if got := Apply(); got != 0 {
		t.Fatalf("Apply with GOMEMLIMIT set = %d, want 0 (the environment wins)", got)
	}
	if after := debug.SetMemoryLimit(-1); after != before {
		t.Fatalf("Apply changed the runtime's limit from %d to %d although GOMEMLIMIT is set", before, after)
	}
}
