package pkg

import (
	"fmt"
	"testing"
)

// benchPackage has n Apply tasks of one template each (a Deployment with
// a ConfigMap document, using parameters and Sprig), in steps of ten.
func benchPackage(n int) *Package {
	p := &Package{
		Operator: Operator{Name: "bench", OperatorVersion: "1.0.0", AppVersion: "2.0", Plans: map[string]PlanSpec{}},
		Params: Params{Parameters: []Param{
			{Name: "REPLICAS", Type: TypeInteger, Default: "3"},
			{Name: "IMAGE", Default: "nginx:1.27"},
			{Name: "LABELS", Type: TypeMap, Default: map[string]any{"team": "web", "tier": "frontend"}},
		}},
		Templates: map[string]string{},
	}
	deploy := PlanSpec{Strategy: "serial"}
	phase := Phase{Name: "main", Strategy: "serial"}
	for i := range n {
		name := fmt.Sprintf("svc-%02d", i)
		p.Templates[name+".yaml"] = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}-` + name + `
  namespace: {{ .Namespace }}
  labels:
{{ toYaml .Params.LABELS | indent 4 }}
spec:
  replicas: {{ .Params.REPLICAS }}
  selector:
    matchLabels:
      app: ` + name + `
  template:
    metadata:
      labels:
        app: ` + name + `
    spec:
      containers:
        - name: app
          image: {{ .Params.IMAGE | quote }}
          env:
            - name: LAST
              value: "{{ sub (atoi .Params.REPLICAS) 1 }}"
            - name: STEP
              value: {{ printf "%s/%s/%s" .PlanName .PhaseName .StepName | quote }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Name }}-` + name + `-config
data:
  version: {{ .AppVersion | quote }}
`
		p.Operator.Tasks = append(p.Operator.Tasks, Task{Name: name, Kind: KindApply, Spec: TaskSpec{Resources: []string{name + ".yaml"}}})
		if i%10 == 0 {
			phase.Steps = append(phase.Steps, Step{Name: fmt.Sprintf("step-%d", i/10)})
		}
		last := &phase.Steps[len(phase.Steps)-1]
		last.Tasks = append(last.Tasks, name)
	}
	deploy.Phases = []Phase{phase}
	p.Operator.Plans[PlanDeploy] = deploy
	return p
}

// BenchmarkRenderPlan renders a plan of 50 templates (100 objects).
func BenchmarkRenderPlan(b *testing.B) {
	p := benchPackage(50)
	params, err := Resolve(p, map[string]any{"REPLICAS": 5.0}, nil)
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Instance: "web", Namespace: "prod", Params: params}
	b.ReportAllocs()
	for b.Loop() {
		out, _, err := RenderPlan(p, PlanDeploy, in)
		if err != nil {
			b.Fatal(err)
		}
		if got := len(out.Objects("Apply")); got != 100 {
			b.Fatalf("%d objects", got)
		}
	}
}
