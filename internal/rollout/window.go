package rollout

// This file reads a ManagedCluster's maintenance windows: whether one is
// open at a given time, and when the next opens. It is pure: the caller
// passes the time.

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// MinWindowDuration is the shortest maintenance window accepted.
const MinWindowDuration = time.Minute

// WindowState is where a cluster's maintenance windows stand at a time.
type WindowState struct {
	// Open is true inside a window, and when the cluster declares none.
	Open bool
	// Opens is when the next window opens, while closed.
	Opens time.Time
	// Closes is when the window open now closes (the end of its latest
	// opening; a window that reopens at that moment is open again then).
	// Zero when the cluster declares no windows.
	Closes time.Time
	// Index is the window of spec.maintenanceWindows that is open (the
	// one that closes last) or, while closed, opens next (the first of
	// those that open earliest); -1 without windows.
	Index int
}

// standardCron reads the five fields users write (minute, hour, day of
// month, month, day of week) and refuses descriptors such as @daily,
// whose @every form has no fixed times.
var standardCron = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Window says whether one of windows is open at now, and when it closes
// or when the next opens. No windows: always open. A window is open when
// one of its openings t has t <= now < t+duration, so a window that opened
// before now and has not run its duration is open.
//
// Schedule names wall-clock times in the window's TimeZone (default UTC).
// Around daylight-saving changes: an opening the clock skips (02:30 when
// clocks jump from 02:00 to 03:00) opens the window as the clock resumes
// (03:00); an opening the clock passes twice (02:30 when clocks fall back
// from 03:00 to 02:00) opens it once, at the first. Duration is elapsed
// time: a 2h window opening at 01:00 on the night clocks jump forward
// closes at 04:00.
//
// Schedules are minute-granular. A test that needs a window opening a few
// seconds from now uses the next whole minute ("M H * * *" in UTC with a
// duration of 2m): it opens at most 60 s later.
//
// The error is ValidateWindows's: every problem, each naming its field.
func Window(windows []v1alpha1.MaintenanceWindow, now time.Time) (WindowState, error) {
	parsed, err := parseWindows(windows)
	if err != nil {
		return WindowState{}, err
	}
	if len(parsed) == 0 {
		return WindowState{Open: true, Index: -1}, nil
	}
	open, closed := WindowState{Open: true, Index: -1}, WindowState{Index: -1}
	for i, w := range parsed {
		if opened, ok := w.latestOpening(now); ok {
			if closes := opened.Add(w.duration); open.Index < 0 || closes.After(open.Closes) {
				open.Closes, open.Index = closes, i
			}
			continue
		}
		if opens := w.next(now); !opens.IsZero() && (closed.Index < 0 || opens.Before(closed.Opens)) {
			closed.Opens, closed.Index = opens, i
		}
	}
	switch {
	case open.Index >= 0:
		return open, nil
	case closed.Index < 0:
		return WindowState{}, fmt.Errorf("spec.maintenanceWindows: none opens within five years of %s; write schedules of dates that recur", now.UTC().Format(time.RFC3339))
	}
	return closed, nil
}

// ValidateWindows reports every problem of windows, each naming its
// field and how to write it; nil when all can be read.
func ValidateWindows(windows []v1alpha1.MaintenanceWindow) error {
	_, err := parseWindows(windows)
	return err
}

// window is a MaintenanceWindow read.
type window struct {
	// schedule runs on a wall clock: times in UTC whose fields are the
	// wall-clock fields in loc (UTC has no daylight-saving changes).
	schedule cron.Schedule
	loc      *time.Location
	duration time.Duration
}

// validationEpoch is the time a schedule must open after to be valid: a
// fixed time keeps the verdict the same on every call. Cron searches five
// years ahead, long enough for any date that recurs (February 29).
var validationEpoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// parseWindows reads windows, or returns every problem in one error.
func parseWindows(windows []v1alpha1.MaintenanceWindow) ([]window, error) {
	var out []window
	var problems []string
	for i, mw := range windows {
		field := fmt.Sprintf("spec.maintenanceWindows[%d]", i)
		w := window{duration: mw.Duration.Duration}
		ok := true
		schedule, err := standardCron.Parse(mw.Schedule)
		switch {
		case strings.HasPrefix(strings.TrimSpace(mw.Schedule), "TZ=") || strings.HasPrefix(strings.TrimSpace(mw.Schedule), "CRON_TZ="):
			problems = append(problems, fmt.Sprintf("%s.schedule %q: names a time zone; write the five fields only and the zone in %s.timeZone, e.g. \"Europe/Berlin\"", field, mw.Schedule, field))
			ok = false
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s.schedule %q: %v; write minute hour day-of-month month day-of-week, e.g. \"0 2 * * 6\"", field, mw.Schedule, err))
			ok = false
		default:
			schedule.(*cron.SpecSchedule).Location = time.UTC
			w.schedule = schedule
		}
		switch w.loc, err = time.LoadLocation(mw.TimeZone); {
		case mw.TimeZone == "Local":
			problems = append(problems, fmt.Sprintf("%s.timeZone \"Local\": is the manager's host zone, which the cluster's owners do not control; write an IANA time zone such as \"Europe/Berlin\"", field))
			ok = false
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s.timeZone %q: not an IANA time zone; write one such as \"Europe/Berlin\" or \"America/New_York\", or leave it empty for UTC", field, mw.TimeZone))
			ok = false
		}
		if w.duration < MinWindowDuration {
			problems = append(problems, fmt.Sprintf("%s.duration %s: a window stays open at least %s; write e.g. \"2h\"", field, w.duration, MinWindowDuration))
			ok = false
		}
		if ok && w.next(validationEpoch).IsZero() {
			problems = append(problems, fmt.Sprintf("%s.schedule %q: names no date that exists (such as February 30); write a date that recurs", field, mw.Schedule))
			ok = false
		}
		if ok {
			out = append(out, w)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return out, nil
}

// latestOpening returns the last opening t with now-duration < t <= now,
// and whether there is one (the window is open at now). It bisects the
// look-back rather than walk every opening: a minute schedule with a
// week's duration has 10,080 of them.
func (w window) latestOpening(now time.Time) (time.Time, bool) {
	opensWithin := func(back time.Duration) bool {
		t := w.next(now.Add(-back))
		return !t.IsZero() && !t.After(now)
	}
	lo, hi := time.Duration(0), w.duration
	if !opensWithin(hi) {
		return time.Time{}, false
	}
	// Invariant: no opening in (now-lo, now], one in (now-hi, now].
	// Openings are at least a minute apart, so within a second of the
	// boundary the one left is the latest.
	for hi-lo > time.Second {
		mid := lo + (hi-lo)/2
		if opensWithin(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return w.next(now.Add(-hi)), true
}

// next returns the first opening strictly after t, or the zero time when
// the schedule names none within five years.
func (w window) next(t time.Time) time.Time {
	wall := w.wallClock(t)
	// Every opening at or before t's wall clock is at or before t; one
	// after it is too only in an hour the clock passes twice, so few are
	// skipped here.
	for range 2 * 60 {
		if wall = w.schedule.Next(wall); wall.IsZero() {
			return time.Time{}
		}
		if at := w.instant(wall); at.After(t) {
			return at
		}
	}
	return time.Time{}
}

// wallClock returns t's wall clock in the window's zone.
func (w window) wallClock(t time.Time) time.Time {
	l := t.In(w.loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// instant returns the first instant whose wall clock in the window's zone
// reads wall or later: the first of two instants that read wall when the
// clock falls back, and the end of the skipped hour when it jumps over
// wall.
func (w window) instant(wall time.Time) time.Time {
	at := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), w.loc)
	switch reads := w.wallClock(at); {
	case reads.After(wall): // skipped; at is after the jump
		start, _ := at.ZoneBounds()
		return start
	case reads.Before(wall): // skipped; at is before the jump
		_, end := at.ZoneBounds()
		return end
	}
	// The same wall clock earlier, under the offset in force before at's
	// zone began: the first time the clock read it, when it fell back.
	start, _ := at.ZoneBounds()
	if start.IsZero() {
		return at
	}
	_, before := start.Add(-time.Nanosecond).Zone()
	if earlier := wall.Add(-time.Duration(before) * time.Second); earlier.Before(at) && w.wallClock(earlier).Equal(wall) {
		return earlier
	}
	return at
}
