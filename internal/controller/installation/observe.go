package installation

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/depend"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/news"
)

// What a person watching an installation is told: every Event is also a
// log line carrying the installation, its cluster and its revision, so
// that `kubectl events` and the manager's logs tell the same story.
// Events are recorded where something happens (an apply, a rollback, a
// drift correction, an uninstall) and, in finish, when the reconcile
// changed where the installation stands (internal/news decides which
// changes are news); a reconcile that changes nothing records nothing.

// announce records what this reconcile applied (s.report.applied) and its
// transitions, except those a step already told with the same reason (a
// rollback, for one, records RolledBack where it happens and then stops
// on it).
func (r *Reconciler) announce(s *scope) {
	for _, n := range news.Of(s.report.applied, news.Transitions(s.report.before, news.StandingOf(s.inst), s.inst.Generation, s.block)) {
		if !s.report.told[n.Reason] {
			r.event(s, n.Type, n.Reason, n.Message)
		}
	}
}

// event records an Event on the installation and logs it with the
// installation's keys (s.report.log) and its revision.
func (r *Reconciler) event(s *scope, eventType, reason, message string) {
	if s.report.told == nil {
		s.report.told = map[string]bool{}
	}
	s.report.told[reason] = true
	s.report.log.Info(message, "event", reason, "type", eventType, "revision", news.RevisionOf(s.inst), "version", s.inst.Status.InstalledVersion)
	if r.Events == nil {
		return
	}
	r.Events.Eventf(s.inst, nil, eventType, reason, "Reconcile", "%s", message)
}

// begin makes the scope of one reconcile, with a logger carrying the
// installation ("namespace/name") and its cluster ("hub" for the hub);
// the returned context carries it too, so that every log line of the
// reconcile has them.
func (r *Reconciler) begin(ctx context.Context, inst *v1alpha1.ExtensionInstallation) (context.Context, *scope) {
	s := newScope(inst)
	s.report.log = log.FromContext(ctx).WithValues("installation", depend.NameOf(inst), "cluster", metrics.ClusterLabel(inst.Spec.Cluster))
	return log.IntoContext(ctx, s.report.log), s
}
