package apply

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// PodExec runs command, without a terminal or standard input, in container
// of the Pod namespace/pod, and returns what it wrote to its standard
// output. It keeps at most limit+1 bytes of that output and may stop the
// command once it has them, so that a caller can tell output longer than
// limit without holding all of it. A command that ran and failed is an
// error satisfying k8s.io/client-go/util/exec.ExitError, whose text ends
// with what the command wrote to its standard error; any other error means
// the command could not be run (or its output not read) and may succeed
// when retried.
type PodExec func(ctx context.Context, namespace, pod, container string, command []string, limit int) ([]byte, error)

// stderrLimit bounds how much of a command's standard error an exec error
// quotes.
const stderrLimit = 4 << 10

// newPodExec returns a PodExec that uses the pods/exec subresource of the
// cluster cfg points at, as kubectl exec does: over WebSocket, or over
// SPDY from API servers that do not offer it. rc builds the request URL
// and must point at the same cluster.
func newPodExec(cfg *rest.Config, rc rest.Interface) PodExec {
	return func(ctx context.Context, namespace, pod, container string, command []string, limit int) ([]byte, error) {
		req := rc.Post().AbsPath("/api/v1/namespaces", namespace, "pods", pod, "exec").
			Param("container", container).Param("stdout", "true").Param("stderr", "true")
		for _, arg := range command {
			req = req.Param("command", arg)
		}
		url := req.URL()
		spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", url)
		if err != nil {
			return nil, err
		}
		// WebSocket requires GET (RFC 6455 section 4.1).
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", url.String())
		if err != nil {
			return nil, err
		}
		exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stdout := &cappedBuffer{limit: limit + 1, full: cancel}
		stderr := &cappedBuffer{limit: stderrLimit}
		err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
		out, overflowed := stdout.contents()
		if overflowed {
			// Stopped on purpose: the caller only needs to know it is too long.
			return out, nil
		}
		if err != nil {
			if msg, _ := stderr.contents(); len(bytes.TrimSpace(msg)) > 0 {
				err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(msg))
			}
			return nil, err
		}
		return out, nil
	}
}

// cappedBuffer keeps the first limit bytes written to it and drops the
// rest; once it has dropped something it calls full (if set) once. It is
// safe for one writer and one reader: a stream stopped by its context may
// still be writing when the caller reads.
type cappedBuffer struct {
	limit int
	full  func()

	mu         sync.Mutex
	buf        []byte
	overflowed bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := max(b.limit-len(b.buf), 0)
	b.buf = append(b.buf, p[:min(len(p), room)]...)
	if len(p) > room && !b.overflowed {
		b.overflowed = true
		if b.full != nil {
			b.full()
		}
	}
	return len(p), nil
}

// contents returns a copy of what was kept and whether anything was
// dropped.
func (b *cappedBuffer) contents() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf), b.overflowed
}
