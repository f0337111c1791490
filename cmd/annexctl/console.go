package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/annex-platform/annex/internal/cluster"
	"github.com/annex-platform/annex/internal/console"
)

// newConsoleCommand is `annexctl console`.
func newConsoleCommand(kubeconfig *string) *cobra.Command {
	var address string
	var open bool
	cmd := &cobra.Command{
		Use:   "console [--address 127.0.0.1:8080] [--open]",
		Short: "Serve the web console on this machine, acting as you with your kubeconfig",
		Long: `console serves Annex's web console: the catalog (search, versions against each
cluster's Kubernetes version, values schema, and an install form), the clusters,
every installation with its conditions, plan, inventory health, revisions, drift
and events, and the changes waiting for approval with their permission diff.

Every read and every action is yours: the console uses your kubeconfig, so the
API server applies your RBAC; nothing runs with the Annex manager's rights. It
listens on 127.0.0.1 unless told otherwise; pages update live as Annex reports.`,
		Example: `  annexctl console
  annexctl console --address 127.0.0.1:9000 --open`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = *kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
			if err != nil {
				return fmt.Errorf("reading the kubeconfig of the hub cluster: %w; pass --kubeconfig or set KUBECONFIG", err)
			}
			ctx := cmd.Context()
			srv, err := console.New(ctx, cluster.ClientConfig(cfg), console.Options{Address: address})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", address)
			if err != nil {
				return fmt.Errorf("--address %s: %w; choose another with --address 127.0.0.1:PORT", address, err)
			}
			url := "http://" + ln.Addr().String() + "/"
			fmt.Fprintf(cmd.OutOrStdout(), "Annex console on %s (Ctrl-C stops it)\n", url)
			if open {
				if err := openBrowser(url); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "could not open a browser (%v); open %s yourself\n", err, url)
				}
			}
			return serve(ctx, ln, srv)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:8080", "host:port to listen on; keep it on 127.0.0.1 unless others should reach the console")
	cmd.Flags().BoolVar(&open, "open", false, "open the console in the default browser")
	return cmd
}

// serve serves h on ln until ctx ends, then lets requests finish for up
// to five seconds.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	// Requests' contexts end with ctx, so that open live-update streams
	// end at once on Ctrl-C.
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// openBrowser opens url with the desktop's opener.
func openBrowser(url string) error {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", url).Start()
	}
	return exec.Command(name, url).Start()
}
