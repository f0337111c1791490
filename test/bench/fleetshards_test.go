package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shardManagers are the fleet simulation's managers: one per shard (one
// unsharded manager when the size has a single shard), all talking to
// the hub through the same counting proxy.
type shardManagers struct {
	names    []string   // the shards, "" the default one
	managers []*manager // by shard
	metrics  []string   // their metrics addresses; none unless asked for
}

// startShards starts the managers of size's shards, each with its own
// log (under work/<shard>) and artifact cache (cacheDir-<shard>); with
// metrics, each serves its metrics on a free address.
func startShards(b *testing.B, size fleetSize, work, kubeconfig, cacheDir string, metrics bool) *shardManagers {
	b.Helper()
	s := &shardManagers{}
	for i := range size.shards {
		shard := size.shardOf(i)
		dir, cache := work, cacheDir
		args := []string{}
		if shard != "" {
			dir, cache = filepath.Join(work, shard), cacheDir+"-"+shard
			args = append(args, "--shard", shard)
		}
		must(b, os.MkdirAll(dir, 0o755))
		args = append(args, "--cache-dir", cache)
		if metrics {
			addr := freeAddress(b)
			args = append(args, "--metrics-bind-address", addr)
			s.metrics = append(s.metrics, addr)
		}
		s.names = append(s.names, shard)
		s.managers = append(s.managers, startManager(b, dir, kubeconfig, args...))
	}
	return s
}

// RSS is the managers' resident memory now, summed, in MiB.
func (s *shardManagers) RSS(b *testing.B) float64 {
	return sum(s.managers, func(m *manager) float64 { return m.RSS(b) })
}

// Peak is the managers' peak resident memory, summed, in MiB.
func (s *shardManagers) Peak(b *testing.B) float64 {
	return sum(s.managers, func(m *manager) float64 { return m.Peak(b) })
}

// CPU is the managers' CPU time, summed.
func (s *shardManagers) CPU(b *testing.B) time.Duration {
	return sum(s.managers, func(m *manager) time.Duration { return m.CPU(b) })
}

// sum adds up f over the managers.
func sum[T float64 | time.Duration](managers []*manager, f func(*manager) T) T {
	var total T
	for _, m := range managers {
		total += f(m)
	}
	return total
}

// Describe names each shard's peak RSS and CPU time (of these managers:
// after a restart, the restarted ones), when there are several.
func (s *shardManagers) Describe(b *testing.B) string {
	b.Helper()
	if len(s.managers) < 2 {
		return ""
	}
	var parts []string
	for i, m := range s.managers {
		name := s.names[i]
		if name == "" {
			name = "default"
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MiB %.1f CPU-s", name, m.Peak(b), m.CPU(b).Seconds()))
	}
	return "; by shard, since the last start: " + strings.Join(parts, ", ")
}

// Kill sends every manager SIGKILL and waits for it to end.
func (s *shardManagers) Kill(b *testing.B) {
	b.Helper()
	for _, m := range s.managers {
		must(b, m.cmd.Process.Kill())
		_ = m.cmd.Wait()
		<-m.done
	}
}
