package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// WriteRollout prints a profile's rollout: strategy, revisions, phase,
// step, the clusters per state, the failures and window waits named, the
// message, and the steps with where each stands.
func WriteRollout(w io.Writer, o Output, v *RolloutView) error {
	if o != OutputTable {
		return writeData(w, o, v)
	}
	fmt.Fprintf(w, "profile %s (namespace %s)\n", v.Profile, v.Namespace)
	strategy := v.Strategy
	if v.Strategy == "Steps" {
		strategy += fmt.Sprintf(", onFailure %s", v.OnFailure)
		if v.Paused {
			strategy += ", paused (spec.rollout.paused)"
		}
	}
	fmt.Fprintf(w, "  strategy:  %s\n", strategy)
	if !v.Started {
		fmt.Fprintf(w, "  no revision yet: the manager has not rolled out the profile (status.rollout is empty)\n")
		return nil
	}
	rev := fmt.Sprint(v.Revision)
	if v.StableRevision != 0 {
		rev += fmt.Sprintf(" (stable %d)", v.StableRevision)
	}
	fmt.Fprintf(w, "  revision:  %s\n", rev)
	phase := string(v.Phase)
	if !v.Observed {
		phase += " (the manager has not seen the latest change of the profile yet)"
	}
	fmt.Fprintf(w, "  phase:     %s\n", phase)
	if v.StepName != "" {
		fmt.Fprintf(w, "  step:      %d/%d %s\n", v.Step+1, v.StepCount, v.StepName)
	}
	fmt.Fprintf(w, "  clusters:  %s\n", CountsLine(v.Counts, true))
	if v.HaltReason != "" {
		halted := v.HaltReason
		if v.HaltedAt != nil {
			halted += " at " + v.HaltedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "  halted:    %s\n", halted)
	}
	if v.AbortRequested != "" {
		fmt.Fprintf(w, "  abort:     requested for revision %s (annotation %s)\n", v.AbortRequested, v1alpha1.AnnotationRolloutAbort)
	}
	if len(v.Failures) > 0 {
		fmt.Fprintf(w, "  failures (%d of %d named):\n", len(v.Failures), v.Counts.Failed)
		for _, f := range v.Failures {
			fmt.Fprintf(w, "    %s\n", clusterStateLine(f))
		}
	}
	if len(v.Waiting) > 0 {
		fmt.Fprintf(w, "  waiting for a maintenance window (%d of %d named):\n", len(v.Waiting), v.Counts.WaitingForWindow)
		for _, c := range v.Waiting {
			fmt.Fprintf(w, "    %s\n", clusterStateLine(c))
		}
	}
	if len(v.HeldBackClusters) > 0 {
		fmt.Fprintf(w, "  held back by their Kubernetes version (%d of %d named; done at the highest version that fits):\n", len(v.HeldBackClusters), v.HeldBack)
		for _, c := range v.HeldBackClusters {
			fmt.Fprintf(w, "    %s\n", clusterStateLine(c))
		}
	}
	if v.Message != "" {
		fmt.Fprintf(w, "  message:   %s\n", v.Message)
	}
	if len(v.Steps) > 0 {
		fmt.Fprintln(w, "  steps:")
		t := newTable(w)
		fmt.Fprintln(t, "    \tSTEP\tCLUSTERS\tBUDGET\tTIMEOUT\tSOAK\tAPPROVAL")
		for _, s := range v.Steps {
			mark := map[string]string{StepDone: "✓", StepCurrent: "▶", StepPending: " "}[s.State]
			clusters := s.Clusters
			if s.Selector != "" {
				clusters += " of " + s.Selector
			}
			approval := "-"
			if s.RequireApproval {
				approval = "required"
			}
			fmt.Fprintf(t, "    %s\t%s\t%s\t%s\t%s\t%s\t%s\n", mark, s.Name, clusters, s.MaxUnavailable, s.Timeout, orDash(s.SoakTime), approval)
		}
		return t.Flush()
	}
	return nil
}

// clusterStateLine is "cluster (step canary, extension podinfo): Reason:
// message, until 2026-03-01T22:00:00Z".
func clusterStateLine(c v1alpha1.RolloutClusterState) string {
	line := c.Cluster
	if where := nonEmpty(prefixed("step ", c.Step), prefixed("extension ", c.Extension)); len(where) > 0 {
		line += " (" + strings.Join(where, ", ") + ")"
	}
	if detail := nonEmpty(c.Reason, firstLine(c.Message, 200)); len(detail) > 0 {
		line += ": " + strings.Join(detail, ": ")
	}
	if c.Until != nil {
		line += ", until " + c.Until.UTC().Format(time.RFC3339)
	}
	return line
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// WriteRolloutHistory prints a profile's revisions, oldest first:
// REVISION ROLLOUT CHANGE-CAUSE EXTENSIONS, ROLLOUT marking the revision
// rolled out (with its phase) and the stable one.
func WriteRolloutHistory(w io.Writer, o Output, profile string, revs []RevisionView) error {
	if o != OutputTable {
		return writeData(w, o, revs)
	}
	if len(revs) == 0 {
		_, err := fmt.Fprintf(w, "profile %s has no revisions yet: the manager makes the first when it reconciles the profile\n", profile)
		return err
	}
	t := newTable(w)
	fmt.Fprintln(t, "REVISION\tROLLOUT\tCHANGE-CAUSE\tEXTENSIONS")
	for _, r := range revs {
		var marks []string
		if r.Current {
			marks = append(marks, "current ("+string(r.Phase)+")")
		}
		if r.Stable {
			marks = append(marks, "stable")
		}
		fmt.Fprintf(t, "%d\t%s\t%s\t%s\n", r.Revision, orDash(strings.Join(marks, ", ")), orDash(firstLine(r.ChangeCause, 60)), strings.Join(r.Extensions, ", "))
	}
	return t.Flush()
}

// WriteRevision prints one revision in full: its header, then its data
// as YAML.
func WriteRevision(w io.Writer, o Output, profile string, r RevisionView) error {
	if o != OutputTable {
		return writeData(w, o, r)
	}
	fmt.Fprintf(w, "revision %d of profile %s (ControllerRevision %s)\n", r.Revision, profile, r.Name)
	if r.ChangeCause != "" {
		fmt.Fprintf(w, "change-cause: %s\n", r.ChangeCause)
	}
	var marks []string
	if r.Current {
		marks = append(marks, "rolled out now ("+string(r.Phase)+")")
	}
	if r.Stable {
		marks = append(marks, "stable")
	}
	if len(marks) > 0 {
		fmt.Fprintf(w, "rollout: %s\n", strings.Join(marks, ", "))
	}
	data, err := yaml.Marshal(r.Data)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}
