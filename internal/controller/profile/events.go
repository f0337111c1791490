package profile

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// describe says what an action a profile carried out did, for an Event
// on the profile: created, updated (Enforced) or removed installations.
// ok is false for actions that are no news: recording a Default
// extension, or removing an installation already being deleted.
func describe(p *v1alpha1.ExtensionProfile, a action) (reason, message string, ok bool) {
	ns := namespaceOf(p)
	switch a.kind {
	case actCreate:
		return "InstallationCreated", fmt.Sprintf("created ExtensionInstallation %s/%s: %s (%s) on cluster %s",
			ns, a.name, a.want.ext.Name, a.want.ext.Mode, clusterLabel(a.want.cluster)), true
	case actUpdate:
		if a.want.moved {
			return "InstallationUpdated", fmt.Sprintf("moved ExtensionInstallation %s/%s to revision %d: %s %s on cluster %s",
				ns, a.name, a.want.revision, a.want.ext.Name, a.want.ext.Version, clusterLabel(a.want.cluster)), true
		}
		return "InstallationUpdated", fmt.Sprintf("set ExtensionInstallation %s/%s back to the profile's %s on cluster %s (Enforced)",
			ns, a.name, a.want.ext.Name, clusterLabel(a.want.cluster)), true
	case actRemove:
		if a.existing == nil || !a.existing.DeletionTimestamp.IsZero() {
			return "", "", false
		}
		how := "deleted (it uninstalls)"
		if p.Spec.RemovalPolicy == v1alpha1.DeletionPolicyOrphan {
			how = "released (removalPolicy Orphan: what it installed stays)"
		}
		return "InstallationRemoved", fmt.Sprintf("ExtensionInstallation %s/%s of %s on cluster %s left the profile: %s",
			ns, a.name, a.existing.Spec.Extension, clusterLabel(a.existing.Spec.Cluster), how), true
	}
	return "", "", false
}

// tell records what the carried out actions done on cluster did: each in
// the log, and in Events on the profile, one per kind of news (a cluster
// given ten extensions is one Event, not ten: at fleet size one Event
// per installation would be most of what the hub stores).
func (r *Reconciler) tell(ctx context.Context, p *v1alpha1.ExtensionProfile, cluster string, done []action) {
	var reasons []string
	messages := map[string][]string{}
	for _, a := range done {
		reason, message, ok := describe(p, a)
		if !ok {
			continue
		}
		log.FromContext(ctx).Info(message, "event", reason, "installation", namespaceOf(p)+"/"+a.name)
		if _, seen := messages[reason]; !seen {
			reasons = append(reasons, reason)
		}
		messages[reason] = append(messages[reason], message)
	}
	if r.Events == nil {
		return
	}
	for _, reason := range reasons {
		r.Events.Eventf(p, nil, corev1.EventTypeNormal, reason, "Reconcile", "%s", summary(reason, cluster, messages[reason]))
	}
}

// eventNoteLimit bounds an Event's note (the API server refuses more
// than 1 KiB).
const eventNoteLimit = 1024

// summary is one Event's note for the messages of one reason on cluster:
// the message itself when there is one, else how many and as many of
// them as fit.
func summary(reason, cluster string, messages []string) string {
	if len(messages) == 1 {
		return truncate(messages[0], eventNoteLimit)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d on cluster %s (%s): ", len(messages), clusterLabel(cluster), reason)
	for i, m := range messages {
		more := fmt.Sprintf("; and %d more", len(messages)-i)
		if sb.Len()+len(m)+2+len(more) > eventNoteLimit {
			sb.WriteString(more)
			break
		}
		if i > 0 {
			sb.WriteString("; ")
		}
		sb.WriteString(m)
	}
	return sb.String()
}

// truncate shortens s to at most n bytes, marking the cut, never within
// a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
