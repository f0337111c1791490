package testenv_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/annex-platform/annex/internal/testenv"
)

func TestStopProcess(t *testing.T) {
	polite := exec.Command("sleep", "30")
	if err := polite.Start(); err != nil {
		t.Fatal(err)
	}
	if err := testenv.StopProcess(polite, 10*time.Second); err != nil {
		t.Errorf("a process that stops on SIGTERM: %v", err)
	}
	if polite.ProcessState == nil {
		t.Error("StopProcess returned before the process was waited for")
	}
	if err := testenv.StopProcess(polite, time.Second); err != nil {
		t.Errorf("a second stop: %v, want nil", err)
	}

	stubborn := exec.Command("sh", "-c", `trap "" TERM; while :; do :; done`)
	if err := stubborn.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the shell install its trap
	err := testenv.StopProcess(stubborn, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed it") {
		t.Errorf("a process that ignores SIGTERM: %v, want an error saying it was killed", err)
	}
	if stubborn.ProcessState == nil || stubborn.ProcessState.Exited() {
		t.Errorf("the stubborn process should end by a signal, state %v", stubborn.ProcessState)
	}
}
