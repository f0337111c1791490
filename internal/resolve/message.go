package resolve

import "fmt"

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
