package installation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/remediate"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
)

// runStep runs every task of step once (plan.RunTasks) with the
// installation's applier. Every task is idempotent, so a step that runs
// again after a crash or a retry does no harm.
func (r *Reconciler) runStep(ctx context.Context, s *scope, step plan.Step) plan.StepResult {
	res := plan.RunTasks(step, func(t plan.Task) plan.StepResult { return r.runTask(ctx, s, t) })
	failpoint.Hit(failpoint.AfterPlanStep, s.owner().String())
	return res
}

// runTask runs one task with the installation's applier.
func (r *Reconciler) runTask(ctx context.Context, s *scope, t plan.Task) plan.StepResult {
	applier := s.target.Applier()
	ns := s.targetNamespace()
	switch t.Kind {
	case plan.TaskApply:
		applied, err := applier.Apply(ctx, s.owner(), ns, target.Set{Objects: t.Objects},
			target.ApplyOptions{TakeOwnership: s.inst.Spec.TakeOwnership}.Adopting(s.artifact.adoption))
		if err != nil {
			if b := r.permissionBlock(s.inst, err); b != nil {
				return plan.Failed(t.Name, errors.New(b.Message))
			}
			if remediate.ApplyStop(err).Kind == blockTerminal {
				return plan.Fatal(t.Name, err)
			}
			return plan.Failed(t.Name, err)
		}
		if s.artifact.release != nil && s.artifact.release.ResourcesTask != "" && s.artifact.release.ResourcesTask == t.Name {
			s.observeResources(applied.Health, applied.Inventory)
		}
		return plan.Applied(t.Name, applied.Health.Failed, applied.Health.Ready, applied.Health.Summary)
	case plan.TaskDelete:
		refs := applier.Refs(t.Objects, ns)
		remaining, err := applier.Delete(ctx, s.owner(), refs, true)
		if err != nil {
			return plan.Failed(t.Name, err)
		}
		return plan.Deleted(t.Name, remaining, len(refs))
	case plan.TaskPipe:
		res, err := applier.RunPipe(ctx, s.owner(), ns, *t.Pipe)
		return plan.Piped(t.Name, res.Done, res.Message, err)
	case plan.TaskDependency:
		return r.dependencyReady(s, t)
	case plan.TaskDummy:
		return plan.RunDummy(t)
	}
	return plan.Fatal(t.Name, fmt.Errorf("unknown task kind %q", t.Kind))
}

// dependencyReady is done when another extension (a KudoOperator task) is
// installed on the same cluster, in range and Ready. Annex's resolver
// chooses its version, and its installation is added with the package's
// other dependencies; the task only waits for it.
func (r *Reconciler) dependencyReady(s *scope, t plan.Task) plan.StepResult {
	dep := t.Dependency
	version := v1alpha1.ExtensionVersion{Dependencies: []v1alpha1.Dependency{{Name: dep.Extension, Version: dep.Version}}}
	if unmet := resolve.UnmetDependencies(s.inst.Spec.Extension, version, s.presentOthers()); len(unmet) > 0 {
		return plan.Waiting(t.Name, strings.Join(unmet, "; "))
	}
	return plan.StepResult{Done: true}
}

// ensureNamespace applies the target namespace Annex creates (objs: it,
// or nothing) before a plan's steps run, on every pass of the executor,
// so that the first step finds it whatever its tasks are (a pipe's pod, a
// hook-like Job, RBAC), and a namespace deleted by hand is there again
// before the next step. Applying it when it is there costs a read.
func (r *Reconciler) ensureNamespace(ctx context.Context, s *scope, objs []*unstructured.Unstructured) *block {
	if len(objs) == 0 {
		return nil
	}
	_, err := s.target.Applier().Apply(ctx, s.owner(), s.targetNamespace(), target.Set{Objects: objs},
		target.ApplyOptions{TakeOwnership: s.inst.Spec.TakeOwnership})
	if err == nil {
		return nil
	}
	b := cmp.Or(r.permissionBlock(s.inst, err), remediate.ApplyStop(err))
	b.Message = fmt.Sprintf("creating the target namespace %s: %s", s.targetNamespace(), b.Message)
	return b
}
