package resolve

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/readiness"
)

// ChoiceMessage is the message of an installation's Resolved condition
// when sel is its choice of extension on a cluster of clusterVersion: the
// version, whether the installed one was kept, the channel, how required
// APIs are met, and the target of an upgrade taken one hop at a time.
func ChoiceMessage(extension, clusterVersion string, sel Selection) string {
	msg := fmt.Sprintf("chose %s %s for Kubernetes %s", extension, sel.Version.Version, clusterVersion)
	if sel.Kept {
		msg += " (kept the installed version: spec.upgrade does not allow moving it)"
	}
	switch {
	case sel.DefaultChannelUsed:
		msg += fmt.Sprintf(", channel %s (the package's default; set spec.channel to choose another)", sel.Channel)
	case sel.Channel != "":
		msg += ", channel " + sel.Channel
	}
	for _, p := range sel.Providers {
		// An operator's required API is met by the extension that owns it.
		msg += fmt.Sprintf("; it requires %s, from %s (%s)", p.API, p.Provider, p.Reason)
	}
	if sel.Target != nil {
		// An operator upgrade walks its catalog's graph one edge at a time.
		msg += fmt.Sprintf("; on the way to %s: %s", sel.Target.Version, sel.Hop)
	}
	return msg
}

// Choose takes inst's version from resolution, the answer for its
// cluster of clusterVersion, and says so in its Resolved condition and
// status.resolvedVersion. An installation the resolution could not
// satisfy stops (terminal, its Resolved condition saying why; an
// installed version keeps running). An error: the resolver gave neither.
func Choose(inst *v1alpha1.ExtensionInstallation, resolution *Resolution) (Selection, *news.Stop, error) {
	name := inst.Namespace + "/" + inst.Name
	if ex := resolution.Failed[name]; ex != nil {
		stop := &news.Stop{Kind: news.Terminal, Reason: ex.Reason, Message: ex.Message}
		if inst.Status.InstalledVersion != "" {
			stop.Message += fmt.Sprintf(" %s %s keeps running as it is.", inst.Spec.Extension, inst.Status.InstalledVersion)
		}
		readiness.Set(inst, v1alpha1.ConditionResolved, metav1.ConditionFalse, stop.Reason, stop.Message)
		return Selection{}, stop, nil
	}
	sel, ok := resolution.For(inst.Spec.Extension, name)
	if !ok {
		return Selection{}, nil, fmt.Errorf("the resolver chose no version of %s and gave no reason", inst.Spec.Extension)
	}
	inst.Status.ResolvedVersion = sel.Version.Version
	readiness.Set(inst, v1alpha1.ConditionResolved, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		ChoiceMessage(inst.Spec.Extension, inst.Status.ClusterVersion, sel))
	return sel, nil, nil
}
