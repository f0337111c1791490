package cli

import (
	"context"
	"fmt"
	"sort"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventFilter narrows Events.
type EventFilter struct {
	// Namespace of the installations; "" is every namespace.
	Namespace string
	// Installation, when set, keeps the events of that installation only.
	Installation string
}

// Event is one event Annex recorded about an installation.
type Event struct {
	// Time of the last occurrence.
	Time time.Time `json:"time"`
	// Type is Normal or Warning.
	Type   string `json:"type"`
	Reason string `json:"reason"`
	// Object is "Kind namespace/name" of the object the event is about.
	Object  string `json:"object"`
	Message string `json:"message"`
	// Count is how many times it happened (1 unless the API server
	// merged repeats into a series).
	Count int32 `json:"count"`
}

// Events lists the events about ExtensionInstallations (one LIST of
// events.k8s.io/v1 Events in the namespace), oldest first.
func Events(ctx context.Context, c client.Reader, f EventFilter) ([]Event, error) {
	var list eventsv1.EventList
	if err := c.List(ctx, &list, client.InNamespace(f.Namespace)); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	return EventsOf(list.Items, f), nil
}

// EventsOf keeps the events about ExtensionInstallations that f selects,
// oldest first (ties by object, reason); pure.
func EventsOf(items []eventsv1.Event, f EventFilter) []Event {
	out := []Event{}
	for _, e := range items {
		r := e.Regarding
		if r.Kind != "ExtensionInstallation" || (f.Installation != "" && r.Name != f.Installation) ||
			(f.Namespace != "" && r.Namespace != f.Namespace) {
			continue
		}
		ev := Event{Type: e.Type, Reason: e.Reason, Object: r.Kind + " " + r.Namespace + "/" + r.Name, Message: e.Note, Count: 1}
		switch {
		case e.Series != nil:
			ev.Time, ev.Count = e.Series.LastObservedTime.Time, e.Series.Count
		case !e.EventTime.IsZero():
			ev.Time = e.EventTime.Time
		case !e.DeprecatedLastTimestamp.IsZero():
			ev.Time = e.DeprecatedLastTimestamp.Time
		default:
			ev.Time = e.CreationTimestamp.Time
		}
		if e.DeprecatedCount > ev.Count {
			ev.Count = e.DeprecatedCount
		}
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Time.Equal(out[j].Time) {
			return out[i].Time.Before(out[j].Time)
		}
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}
