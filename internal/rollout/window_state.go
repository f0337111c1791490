package rollout

import "time"

// WindowState is a cluster's maintenance window at one moment.
// (Placeholder until window.go lands; same fields.)
type WindowState struct {
	Open   bool
	Opens  time.Time
	Closes time.Time
	Index  int
}
