package rollout

import (
	"errors"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// WindowState is a cluster's maintenance window at one moment.
// (Placeholder until window.go lands; same fields.)
type WindowState struct {
	Open   bool
	Opens  time.Time
	Closes time.Time
	Index  int
}

// Window is a placeholder until window.go lands.
func Window(windows []v1alpha1.MaintenanceWindow, now time.Time) (WindowState, error) {
	if len(windows) == 0 {
		return WindowState{Open: true}, nil
	}
	return WindowState{}, errors.New("maintenance windows are not read yet")
}
