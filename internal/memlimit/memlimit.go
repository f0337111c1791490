// Package memlimit gives the Go runtime a soft memory limit under the
// container's hard one. Go's collector lets the heap grow to about twice
// what is live before it collects (GOGC=100), so a manager whose live
// heap fits its container's limit can still be killed for a peak of
// garbage; with a soft limit the collector works harder near the limit
// instead. GOMEMLIMIT, when set, wins.
package memlimit

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// Fraction is the share of the container's limit given to the Go
// runtime: the rest is for what the runtime does not count (the binary,
// thread stacks outside the heap, memory not yet returned).
const Fraction = 0.9

// unlimited is where cgroup v1 reports "no limit" (page-rounded
// math.MaxInt64 and above).
const unlimited = int64(1) << 62

// ReadFile reads a file the way os.ReadFile does; tests pass their own.
type ReadFile func(name string) ([]byte, error)

// Cgroup returns the memory limit, in bytes, of the cgroup this process
// runs in, and whether there is one: cgroup v2's memory.max of the
// process's own cgroup (from /proc/self/cgroup) or of the namespace's
// root, else cgroup v1's memory.limit_in_bytes likewise. "max" and v1's
// huge values mean no limit.
func Cgroup(read ReadFile) (int64, bool) {
	v1, v2 := ownCgroups(read)
	var candidates []string
	if v2 != "" {
		candidates = append(candidates, path.Join("/sys/fs/cgroup", v2, "memory.max"))
	}
	candidates = append(candidates, "/sys/fs/cgroup/memory.max")
	if v1 != "" {
		candidates = append(candidates, path.Join("/sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"))
	}
	candidates = append(candidates, "/sys/fs/cgroup/memory/memory.limit_in_bytes")
	for _, name := range candidates {
		data, err := read(name)
		if err != nil {
			continue
		}
		value := strings.TrimSpace(string(data))
		if value == "max" {
			return 0, false
		}
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n <= 0 || n >= unlimited {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// ownCgroups reads the process's cgroup paths from /proc/self/cgroup:
// the memory controller's (v1, "N:memory:/path") and the unified one
// (v2, "0::/path").
func ownCgroups(read ReadFile) (v1, v2 string) {
	data, err := read("/proc/self/cgroup")
	if err != nil {
		return "", ""
	}
	lines := bufio.NewScanner(bytes.NewReader(data))
	for lines.Scan() {
		fields := strings.SplitN(lines.Text(), ":", 3)
		if len(fields) != 3 {
			continue
		}
		switch {
		case fields[0] == "0" && fields[1] == "":
			v2 = fields[2]
		case slices.Contains(strings.Split(fields[1], ","), "memory"):
			v1 = fields[2]
		}
	}
	return v1, v2
}

// Apply sets the Go runtime's memory limit to Fraction of the cgroup's
// limit, unless GOMEMLIMIT is set or there is no limit. It returns the
// limit set, 0 when it set none.
func Apply() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit, ok := Cgroup(os.ReadFile)
	if !ok {
		return 0
	}
	soft := int64(float64(limit) * Fraction)
	debug.SetMemoryLimit(soft)
	return soft
}
