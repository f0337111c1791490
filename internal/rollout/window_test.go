package rollout

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func mw(schedule string, d time.Duration, zone string) v1alpha1.MaintenanceWindow {
	return v1alpha1.MaintenanceWindow{Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: zone}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestWindow(t *testing.T) {
	// 2026-03-29 and 2026-10-25 are the Sundays Europe/Berlin changes
	// clocks: at 02:00 CET to 03:00 CEST, and at 03:00 CEST back to 02:00
	// CET. 2026-11-07 is a Saturday.
	const berlin = "Europe/Berlin"
	saturdays := mw("0 2 * * 6", 2*time.Hour, "")
	for _, tc := range []struct {
		name    string
		windows []v1alpha1.MaintenanceWindow
		now     string
		want    WindowState
		opens   string // want.Opens, RFC 3339
		closes  string // want.Closes
	}{
		// No windows: the cluster may be changed at any time.
		{name: "none", now: "2026-11-04T12:00:00Z", want: WindowState{Open: true, Index: -1}},
		// Closed: the next opening, in UTC by default.
		{name: "closed", windows: []v1alpha1.MaintenanceWindow{saturdays}, now: "2026-11-04T12:00:00Z",
			want: WindowState{Index: 0}, opens: "2026-11-07T02:00:00Z"},
		// Opened before now and still open: it closes duration after it opened.
		{name: "opened before now", windows: []v1alpha1.MaintenanceWindow{saturdays}, now: "2026-11-07T03:59:00Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-11-07T04:00:00Z"},
		// The opening itself is inside; the closing moment is not.
		{name: "at the opening", windows: []v1alpha1.MaintenanceWindow{saturdays}, now: "2026-11-07T02:00:00Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-11-07T04:00:00Z"},
		{name: "at the closing", windows: []v1alpha1.MaintenanceWindow{saturdays}, now: "2026-11-07T04:00:00Z",
			want: WindowState{Index: 0}, opens: "2026-11-14T02:00:00Z"},
		// A window spanning midnight is open after midnight.
		{name: "across midnight", windows: []v1alpha1.MaintenanceWindow{mw("0 23 * * *", 3*time.Hour, "")}, now: "2026-11-05T01:30:00Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-11-05T02:00:00Z"},
		{name: "across midnight, closed", windows: []v1alpha1.MaintenanceWindow{mw("0 23 * * *", 3*time.Hour, "")}, now: "2026-11-05T02:00:00Z",
			want: WindowState{Index: 0}, opens: "2026-11-05T23:00:00Z"},
		// The zone: Saturdays 02:00 in Berlin is 01:00 UTC in winter.
		{name: "time zone", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * * 6", time.Hour, berlin)}, now: "2026-11-04T12:00:00Z",
			want: WindowState{Index: 0}, opens: "2026-11-07T01:00:00Z"},
		// Spring forward: 02:30 does not exist that Sunday; the window
		// opens when the clock resumes at 03:00 CEST (01:00 UTC) instead
		// of skipping a week.
		{name: "DST skipped opening", windows: []v1alpha1.MaintenanceWindow{mw("30 2 * * 0", time.Hour, berlin)}, now: "2026-03-29T00:30:00Z",
			want: WindowState{Index: 0}, opens: "2026-03-29T01:00:00Z"},
		{name: "DST skipped opening, open", windows: []v1alpha1.MaintenanceWindow{mw("30 2 * * 0", time.Hour, berlin)}, now: "2026-03-29T01:59:00Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-03-29T02:00:00Z"},
		// Spring forward: the duration is elapsed time; a 2h window at
		// 01:00 CET closes at 04:00 CEST.
		{name: "DST duration across the jump", windows: []v1alpha1.MaintenanceWindow{mw("0 1 * * 0", 2*time.Hour, berlin)}, now: "2026-03-29T01:30:00Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-03-29T02:00:00Z"},
		// Fall back: 02:30 is read twice that Sunday; the window opens
		// once, at the first (CEST, 00:30 UTC), and next on Monday 02:30 CET.
		{name: "DST repeated opening, first", windows: []v1alpha1.MaintenanceWindow{mw("30 2 * * *", 30*time.Minute, berlin)}, now: "2026-10-25T00:45:00Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-10-25T01:00:00Z"},
		{name: "DST repeated opening, not twice", windows: []v1alpha1.MaintenanceWindow{mw("30 2 * * *", 30*time.Minute, berlin)}, now: "2026-10-25T01:40:00Z",
			want: WindowState{Index: 0}, opens: "2026-10-26T01:30:00Z"},
		// Several windows, all closed: the earliest opening wins.
		{name: "earliest of several", windows: []v1alpha1.MaintenanceWindow{saturdays, mw("0 22 * * 3", time.Hour, "America/New_York"), mw("0 6 * * *", time.Hour, "Asia/Tokyo")},
			now: "2026-11-04T12:00:00Z", want: WindowState{Index: 2}, opens: "2026-11-04T21:00:00Z"},
		{name: "earliest of several, zones", windows: []v1alpha1.MaintenanceWindow{saturdays, mw("0 22 * * 3", time.Hour, "America/New_York")},
			now: "2026-11-04T12:00:00Z", want: WindowState{Index: 1}, opens: "2026-11-05T03:00:00Z"},
		// Several open: the one that closes last.
		{name: "several open", windows: []v1alpha1.MaintenanceWindow{mw("0 * * * *", 10*time.Minute, ""), saturdays, mw("0 3 * * 6", 30*time.Minute, "")},
			now: "2026-11-07T03:05:00Z", want: WindowState{Open: true, Index: 1}, closes: "2026-11-07T04:00:00Z"},
		// Seconds count: open until the last nanosecond before closing.
		{name: "every minute", windows: []v1alpha1.MaintenanceWindow{mw("*/1 * * * *", time.Minute, "")}, now: "2026-11-04T12:00:30.5Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-11-04T12:01:00Z"},
		{name: "last nanosecond", windows: []v1alpha1.MaintenanceWindow{mw("0 12 * * *", time.Minute, "")}, now: "2026-11-04T12:00:59.999999999Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-11-04T12:01:00Z"},
		{name: "a nanosecond before", windows: []v1alpha1.MaintenanceWindow{mw("0 12 * * *", time.Minute, "")}, now: "2026-11-04T11:59:59.999999999Z",
			want: WindowState{Index: 0}, opens: "2026-11-04T12:00:00Z"},
		// Overlapping openings: the latest one says when it closes.
		{name: "overlapping openings", windows: []v1alpha1.MaintenanceWindow{mw("* * * * *", 7*24*time.Hour, "")}, now: "2026-11-04T12:00:30Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-11-11T12:00:00Z"},
		// Longer than its period: a weekly window of eight days is open
		// from its opening a week and a day ago.
		{name: "longer than its period", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * * 6", 8*24*time.Hour, "")}, now: "2026-11-14T01:00:00Z",
			want: WindowState{Open: true, Index: 0}, closes: "2026-11-15T02:00:00Z"},
		// The form a test uses for a window opening seconds from now: the
		// next whole minute, every day.
		{name: "next minute", windows: []v1alpha1.MaintenanceWindow{mw("41 15 * * *", 2*time.Minute, "")}, now: "2026-11-04T15:40:31Z",
			want: WindowState{Index: 0}, opens: "2026-11-04T15:41:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if tc.opens != "" {
				want.Opens = at(tc.opens)
			}
			if tc.closes != "" {
				want.Closes = at(tc.closes)
			}
			got, err := Window(tc.windows, at(tc.now))
			if err != nil {
				t.Fatal(err)
			}
			if got.Open != want.Open || got.Index != want.Index || !got.Opens.Equal(want.Opens) || !got.Closes.Equal(want.Closes) {
				t.Fatalf("got open %v index %d opens %s closes %s, want open %v index %d opens %s closes %s",
					got.Open, got.Index, got.Opens.UTC(), got.Closes.UTC(), want.Open, want.Index, want.Opens.UTC(), want.Closes.UTC())
			}
		})
	}
}

func TestValidateWindows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		windows []v1alpha1.MaintenanceWindow
		want    []string // the problems, in order; none for valid windows
	}{
		// No windows, and well-formed ones, are valid.
		{name: "none"},
		{name: "valid", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * * 6", time.Hour, ""), mw("30 22 * * 1-5", time.Minute, "Europe/Berlin")}},
		// A schedule of four fields: the field, the value, and how to write it.
		{name: "four fields", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * * 6", time.Hour, ""), mw("0 2 * *", time.Hour, "")},
			want: []string{`spec.maintenanceWindows[1].schedule "0 2 * *": expected exactly 5 fields, found 4: [0 2 * *]; write minute hour day-of-month month day-of-week, e.g. "0 2 * * 6"`}},
		// Seconds are not a field users write.
		{name: "six fields", windows: []v1alpha1.MaintenanceWindow{mw("0 0 2 * * 6", time.Hour, "")},
			want: []string{`spec.maintenanceWindows[0].schedule "0 0 2 * * 6": expected exactly 5 fields`}},
		{name: "out of range", windows: []v1alpha1.MaintenanceWindow{mw("61 2 * * *", time.Hour, "")},
			want: []string{`spec.maintenanceWindows[0].schedule "61 2 * * *": end of range (61) above maximum (59)`}},
		// Descriptors: @every has no fixed times, so none is accepted.
		{name: "descriptor", windows: []v1alpha1.MaintenanceWindow{mw("@every 1h", time.Hour, "")},
			want: []string{`spec.maintenanceWindows[0].schedule "@every 1h": parser does not accept descriptors`}},
		// The zone belongs in timeZone, not in the schedule.
		{name: "zone in the schedule", windows: []v1alpha1.MaintenanceWindow{mw("TZ=Asia/Tokyo 0 2 * * *", time.Hour, "")},
			want: []string{`spec.maintenanceWindows[0].schedule "TZ=Asia/Tokyo 0 2 * * *": names a time zone; write the five fields only and the zone in spec.maintenanceWindows[0].timeZone`}},
		{name: "unknown zone", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * * *", time.Hour, "Europe/Bonn")},
			want: []string{`spec.maintenanceWindows[0].timeZone "Europe/Bonn": not an IANA time zone`}},
		// Local would be the manager's zone, which nobody sees.
		{name: "local zone", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * * *", time.Hour, "Local")},
			want: []string{`spec.maintenanceWindows[0].timeZone "Local": is the manager's host zone`}},
		{name: "too short", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * * *", 30*time.Second, "")},
			want: []string{`spec.maintenanceWindows[0].duration 30s: a window stays open at least 1m0s`}},
		{name: "no duration", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * * *", 0, "")},
			want: []string{`spec.maintenanceWindows[0].duration 0s: a window stays open at least 1m0s`}},
		// A date that never comes would wait for ever.
		{name: "never", windows: []v1alpha1.MaintenanceWindow{mw("0 2 30 2 *", time.Hour, "")},
			want: []string{`spec.maintenanceWindows[0].schedule "0 2 30 2 *": names no date that exists`}},
		// February 29 recurs.
		{name: "leap day", windows: []v1alpha1.MaintenanceWindow{mw("0 2 29 2 *", time.Hour, "")}},
		// Every problem of every window, in order.
		{name: "all problems", windows: []v1alpha1.MaintenanceWindow{mw("0 2 * *", 0, "Mars/Olympus"), mw("0 2 * * *", time.Hour, ""), mw("0 25 * * *", time.Hour, "")},
			want: []string{`spec.maintenanceWindows[0].schedule "0 2 * *"`, `spec.maintenanceWindows[0].timeZone "Mars/Olympus"`,
				`spec.maintenanceWindows[0].duration 0s`, `spec.maintenanceWindows[2].schedule "0 25 * * *"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateWindows(tc.windows)
			_, werr := Window(tc.windows, at("2026-11-04T12:00:00Z"))
			if len(tc.want) == 0 {
				if err != nil || werr != nil {
					t.Fatalf("ValidateWindows: %v; Window: %v", err, werr)
				}
				return
			}
			if err == nil || werr == nil || werr.Error() != err.Error() {
				t.Fatalf("ValidateWindows: %v; Window: %v; want the same error", err, werr)
			}
			msg := err.Error()
			rest := msg
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q does not say, in order, %q", msg, w)
				}
				rest = rest[i+len(w):]
			}
			if n := strings.Count(msg, "; spec.maintenanceWindows[") + 1; n != len(tc.want) {
				t.Fatalf("error %q names %d fields, want %d", msg, n, len(tc.want))
			}
		})
	}
}
