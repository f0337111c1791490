package cli

import (
	"fmt"
	"io"
	"strings"
)

// ProgressPrinter prints the progress --wait follows. On a terminal it
// redraws one line (stages done, the current one, its detail); elsewhere
// it prints one plain line per change, for logs.
type ProgressPrinter struct {
	w    io.Writer
	tty  bool
	drew bool
}

// NewProgressPrinter prints to w; tty says whether w is a terminal.
func NewProgressPrinter(w io.Writer, tty bool) *ProgressPrinter {
	return &ProgressPrinter{w: w, tty: tty}
}

// Print shows p; pass it as WaitOptions.OnProgress.
func (pp *ProgressPrinter) Print(p Progress) {
	if !pp.tty {
		fmt.Fprintln(pp.w, ProgressLine(p))
		return
	}
	// \r and "erase line" redraw in place.
	fmt.Fprintf(pp.w, "\r\033[K%s", stagesLine(p))
	pp.drew = true
}

// Done ends a redrawn line, so that what follows starts on its own.
func (pp *ProgressPrinter) Done() {
	if pp.tty && pp.drew {
		fmt.Fprintln(pp.w)
		pp.drew = false
	}
}

// ProgressLine is the plain form: "apply: deploy 3/7 (main/app): PlanRunning: …".
func ProgressLine(p Progress) string {
	if p.State == ProgressDone {
		return string(p.Stage) + ": Ready"
	}
	line := string(p.Stage)
	switch p.State {
	case ProgressApprovalPending:
		line += ": waiting for approval"
	case ProgressFailed:
		line += ": failed"
	case ProgressSuspended:
		line += ": suspended"
	}
	if p.Plan != nil && (p.Stage == StageApply || p.Stage == StageUninstall) {
		line += ": plan " + p.Plan.String()
	}
	if p.Reason != "" {
		line += ": " + p.Reason
	}
	if p.Message != "" {
		line += ": " + firstLine(p.Message, 1000)
	}
	return line
}

// stagesLine is the terminal form: "✓ resolve ✓ dependencies ✓ render
// ✓ gates ▸ apply 3/7 (main/app) · healthy".
func stagesLine(p Progress) string {
	if p.Stage == StageUninstall {
		return ProgressLine(p)
	}
	var b strings.Builder
	reached := false
	for _, s := range Stages {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		switch {
		case s == p.Stage && p.State == ProgressDone:
			b.WriteString("✓ " + string(s))
			reached = true
		case s == p.Stage:
			mark := "▸ "
			if p.State == ProgressFailed {
				mark = "✗ "
			}
			b.WriteString(mark + string(s))
			if p.Plan != nil && s == StageApply {
				b.WriteString(" " + p.Plan.String()[len(p.Plan.Name)+1:])
			}
			if p.Reason != "" {
				b.WriteString(" (" + p.Reason + ")")
			}
			reached = true
		case reached:
			b.WriteString("· " + string(s))
		default:
			b.WriteString("✓ " + string(s))
		}
	}
	return b.String()
}
