// Command profmanager runs the Annex manager as `annex manager
// --metrics-bind-address 0 --health-probe-bind-address 0` does, and writes
// a CPU profile of it to the file named by its only argument when it stops
// on SIGTERM or Ctrl-C. The system benchmark runs it instead of `annex
// manager` when ANNEX_BENCH_CPUPROFILE names a file, to find where the
// manager spends its time (`go tool pprof -top <file>`).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/annex-platform/annex/internal/manager"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: profmanager <cpu profile file>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "profmanager:", err)
		os.Exit(1)
	}
}

func run(profile string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	f, err := os.Create(profile)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	defer pprof.StopCPUProfile()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := manager.New(cfg, manager.Options{MetricsAddr: "0", HealthAddr: "0"})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
