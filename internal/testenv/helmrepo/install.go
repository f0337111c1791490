package helmrepo

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Install installs chart c as release name in namespace ns with the Helm v4
// SDK, as `helm install` does: its storage (driver "secret" or "configmap")
// in namespace storage (ns for the Helm CLI; Flux's helm-controller may
// store elsewhere), its objects written under field manager manager
// ("helm" for the CLI, "helm-controller" for Flux). It returns the action
// configuration for later actions on the release.
func Install(ctx context.Context, kubeconfig, driver, storage, ns, name, manager string, c Chart, values map[string]any) (*action.Configuration, error) {
	data, err := Archive(c)
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	kube.ManagedFieldsManager = manager
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, storage, driver); err != nil {
		return nil, err
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = name, ns
	install.WaitStrategy, install.Timeout = kube.HookOnlyStrategy, time.Minute
	if _, err := install.RunWithContext(ctx, ch, values); err != nil {
		return nil, fmt.Errorf("helm install %s -n %s: %w", name, ns, err)
	}
	return cfg, nil
}
