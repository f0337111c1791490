package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/directory"
	"github.com/annex-platform/annex/internal/catalog/helm"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/engine/pkg"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/verify"
)

// ErrLintFailed is returned, after the problems are printed, when Lint
// finds an error (warnings alone pass).
var ErrLintFailed = errors.New("the package has errors")

// PackageLintOptions configure PackageLint.
type PackageLintOptions struct {
	// Dir is the package folder.
	Dir string
	Out io.Writer
}

// PackageLint prints every problem of the package in Dir, one a line as
// `<dir>/<file>:<line>: <severity>: <message>` (without :<line> when the
// problem concerns a whole file), sorted by file and line. It returns an
// error wrapping ErrLintFailed when a problem is an error.
func PackageLint(o PackageLintOptions) error {
	if err := checkDir(o.Dir); err != nil {
		return err
	}
	errs := 0
	for _, p := range pkg.Lint(os.DirFS(o.Dir)) {
		file := o.Dir
		if p.File != "" {
			file = filepath.Join(o.Dir, filepath.FromSlash(p.File))
		}
		if p.Line > 0 {
			file = fmt.Sprintf("%s:%d", file, p.Line)
		}
		fmt.Fprintf(o.Out, "%s: %s: %s\n", file, p.Severity, p.Message)
		if p.Severity == pkg.SeverityError {
			errs++
		}
	}
	if errs > 0 {
		return fmt.Errorf("%s: %d error(s): %w", o.Dir, errs, ErrLintFailed)
	}
	return nil
}

// PackageRenderOptions configure PackageRender.
type PackageRenderOptions struct {
	// Dir is the package folder.
	Dir string
	// Bases are the folders of the packages Dir extends, directly or
	// along a chain, in any order.
	Bases []string
	// Plan is the plan to render; "" is deploy.
	Plan string
	// ValuesFile is a YAML file of parameter values (NAME: value).
	ValuesFile string
	// Set are NAME=VALUE parameter values; they win over ValuesFile.
	Set []string
	// Instance and Namespace are the installation's name and namespace the
	// templates see (.Name, .Namespace); "" is <package>-instance and
	// default.
	Instance, Namespace string
	// KubeVersion is the target cluster's version, for the engine's
	// kubernetesVersion warning; "" skips it.
	KubeVersion string
	// MergedOnly prints the merged package and no plan.
	MergedOnly bool
	// Out receives the YAML stream; Warnings the engine's warnings (nil
	// means Out, as YAML comments).
	Out, Warnings io.Writer
}

// PackageRender prints, without a cluster, the package in Dir as it
// installs: the effective package after extends (merged onto the bases
// given in Bases) as pkg's YAML printer writes it, then the objects of the
// plan for the given parameters as a YAML stream, each task's objects
// headed by a comment naming the plan, phase, step and task. An error
// names what to fix: a missing base (and the --base flag that supplies
// it), a parameter, a template.
func PackageRender(o PackageRenderOptions) error {
	p, merged, err := loadMerged(o.Dir, o.Bases)
	if err != nil {
		return err
	}
	warn := func(lines []string) {
		for _, w := range lines {
			if o.Warnings != nil {
				fmt.Fprintf(o.Warnings, "warning: %s\n", w)
			} else {
				fmt.Fprintf(o.Out, "# warning: %s\n", w)
			}
		}
	}
	warn(merged.warnings)
	docs, err := p.MarshalYAMLDocs()
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "# Package %s %s", p.Operator.Name, p.Operator.OperatorVersion)
	if len(merged.chain) > 1 {
		fmt.Fprintf(o.Out, ", merged onto %s", strings.Join(merged.chain[:len(merged.chain)-1], " and "))
	}
	fmt.Fprintln(o.Out)
	if _, err := o.Out.Write(docs); err != nil {
		return err
	}
	if o.MergedOnly {
		return nil
	}

	values, err := renderValues(o.ValuesFile, o.Set)
	if err != nil {
		return err
	}
	params, err := pkg.Resolve(p, values, nil)
	if err != nil {
		return fmt.Errorf("parameters (--values, --set): %w", err)
	}
	in := pkg.Input{Instance: o.Instance, Namespace: o.Namespace, Params: params, KubeVersion: o.KubeVersion}
	if in.Instance == "" {
		in.Instance = p.Operator.Name + "-instance"
	}
	if in.Namespace == "" {
		in.Namespace = "default"
	}
	planName := o.Plan
	if planName == "" {
		planName = pkg.PlanDeploy
	}
	rendered, warnings, err := pkg.RenderPlan(p, planName, in)
	if err != nil {
		return err
	}
	warn(warnings)
	return printRenderedPlan(o.Out, rendered)
}

// mergeInfo says how a package was merged: the packages of the chain,
// root first, as "name version", and the merger's warnings.
type mergeInfo struct {
	chain    []string
	warnings []string
}

// loadMerged reads the package in dir and the chain of bases it extends
// from bases, and merges them.
func loadMerged(dir string, bases []string) (*pkg.Package, *mergeInfo, error) {
	if err := checkDir(dir); err != nil {
		return nil, nil, err
	}
	top, err := pkg.LoadDir(os.DirFS(dir))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	var available []*pkg.Package
	for _, b := range bases {
		if err := checkDir(b); err != nil {
			return nil, nil, fmt.Errorf("--base: %w", err)
		}
		p, err := pkg.LoadDir(os.DirFS(b))
		if err != nil {
			return nil, nil, fmt.Errorf("--base %s: %w", b, err)
		}
		available = append(available, p)
	}
	chain := []*pkg.Package{top}
	for cur := top; cur.Operator.Extends != nil; {
		base, err := findBase(cur, available)
		if err != nil {
			return nil, nil, err
		}
		chain = append(chain, base)
		if slices.Contains(chain[:len(chain)-1], base) || base.Operator.Name == top.Operator.Name {
			return nil, nil, fmt.Errorf("the packages extend each other in a circle (%s); a chain ends at a package that extends nothing", chainText(chain))
		}
		cur = base
	}
	slices.Reverse(chain)
	m := &mergeInfo{}
	for _, p := range chain {
		m.chain = append(m.chain, p.Operator.Name+" "+p.Operator.OperatorVersion)
	}
	if len(chain) == 1 {
		if len(bases) > 0 {
			m.warnings = append(m.warnings, fmt.Sprintf("--base is not used: %s extends nothing", m.chain[0]))
		}
		return top, m, nil
	}
	merged, warnings, err := pkg.MergeChain(chain)
	if err != nil {
		return nil, nil, err
	}
	m.warnings = append(m.warnings, warnings...)
	return merged, m, nil
}

// findBase picks, among the --base packages, the one p extends: its name,
// in the version range, the highest operatorVersion when several fit.
func findBase(p *pkg.Package, available []*pkg.Package) (*pkg.Package, error) {
	x := p.Operator.Extends
	var named []string
	var best *pkg.Package
	for _, b := range available {
		if b.Operator.Name != x.Operator {
			continue
		}
		named = append(named, b.Operator.OperatorVersion)
		if pkg.MatchesBase(b, x.Version) && (best == nil || higher(b.Operator.OperatorVersion, best.Operator.OperatorVersion)) {
			best = b
		}
	}
	want := x.Operator
	if x.Version != "" {
		want += " " + x.Version
	}
	switch {
	case best != nil:
		return best, nil
	case len(named) > 0:
		return nil, fmt.Errorf("%s extends %s, but --base gives %s %s; pass a base whose operatorVersion or appVersion matches %q",
			p.Operator.Name, want, x.Operator, strings.Join(named, ", "), x.Version)
	}
	return nil, fmt.Errorf("%s extends %s (operator.yaml extends); pass the base package's folder with --base DIR (repeat --base for each package of a chain)", p.Operator.Name, want)
}

// higher reports whether version a is above b (an unparsable one is lowest).
func higher(a, b string) bool {
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	if errA != nil || errB != nil {
		return errB != nil && errA == nil
	}
	return va.GreaterThan(vb)
}

func chainText(chain []*pkg.Package) string {
	var names []string
	for _, p := range chain {
		names = append(names, p.Operator.Name)
	}
	return strings.Join(names, " → ")
}

// renderValues reads the parameter values of --values and --set.
func renderValues(file string, sets []string) (map[string]any, error) {
	values := map[string]any{}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--values: %w", err)
		}
		if err := yaml.Unmarshal(raw, &values); err != nil {
			return nil, fmt.Errorf("--values %s: must be a YAML mapping of parameter names to values: %v", file, err)
		}
		if values == nil {
			values = map[string]any{}
		}
	}
	for _, s := range sets {
		name, value, ok := strings.Cut(s, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--set %q: use NAME=VALUE, e.g. --set REPLICAS=3", s)
		}
		values[name] = value
	}
	return values, nil
}

// printRenderedPlan writes a plan's objects as a YAML stream, each task's
// first document headed by comments naming where it belongs.
func printRenderedPlan(out io.Writer, p plan.Plan) error {
	fmt.Fprintf(out, "---\n# Plan %s (%s)\n", p.Name, strategy(p.Strategy))
	for _, ph := range p.Phases {
		for _, st := range ph.Steps {
			for _, t := range st.Tasks {
				fmt.Fprintf(out, "---\n# Phase %s (%s) / step %s / task %s: %s\n", ph.Name, strategy(ph.Strategy), st.Name, t.Name, taskSummary(t))
				objects := slices.Clone(t.Objects)
				if t.Pipe != nil && t.Pipe.Pod != nil {
					objects = append(objects, t.Pipe.Pod)
				}
				for i, obj := range objects {
					body, err := yaml.Marshal(obj.Object)
					if err != nil {
						return fmt.Errorf("task %s: %w", t.Name, err)
					}
					if i > 0 {
						fmt.Fprintln(out, "---")
					}
					if _, err := out.Write(body); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func strategy(s plan.Strategy) string {
	if s == "" {
		return string(plan.Parallel)
	}
	return string(s)
}

// taskSummary says in a few words what a task does.
func taskSummary(t plan.Task) string {
	switch t.Kind {
	case plan.TaskApply, plan.TaskDelete:
		return fmt.Sprintf("%s %d object(s)", t.Kind, len(t.Objects))
	case plan.TaskPipe:
		var files []string
		if t.Pipe != nil {
			for _, f := range t.Pipe.Files {
				files = append(files, fmt.Sprintf("%s %s into %s %s", f.Key, f.File+f.EnvFile, f.Kind, f.Name))
			}
		}
		return "Pipe (runs the pod below; copies " + strings.Join(files, ", ") + ")"
	case plan.TaskDependency:
		if t.Dependency != nil {
			return fmt.Sprintf("Dependency on %s %s", t.Dependency.Extension, t.Dependency.Version)
		}
	case plan.TaskDummy:
		if t.Dummy != nil {
			return fmt.Sprintf("Dummy (done %v, wantErr %v, fatal %v)", t.Dummy.Done, t.Dummy.WantErr, t.Dummy.Fatal)
		}
	}
	return string(t.Kind)
}

// PackageOptions configure Package.
type PackageOptions struct {
	// Dir is the package folder.
	Dir string
	// Destination is the folder the archive is written to; "" is the
	// current folder.
	Destination string
	// Index creates or updates index.yaml in Destination.
	Index bool
	Out   io.Writer
}

// Package packs the package in Dir into <Destination>/<name>-<operatorVersion>.tgz,
// the bytes a directory catalog serves for the same folder (so the same
// folder always gives the same digest), after checking that it reads and
// lints without errors. With Index it adds the archive to
// <Destination>/index.yaml as a repository index (helm.AddPackageToIndex,
// a relative URL), creating the file when absent. It prints the paths
// written and returns the archive's path.
func Package(o PackageOptions) (string, error) {
	archive, m, err := packFolder(o.Dir)
	if err != nil {
		return "", err
	}
	dest := o.Destination
	if dest == "" {
		dest = "."
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", fmt.Errorf("--destination: %w", err)
	}
	name := helm.PackageFileName(m.Name, m.OperatorVersion)
	target := filepath.Join(dest, name)
	if err := writeFile(target, archive); err != nil {
		return "", err
	}
	fmt.Fprintf(o.Out, "wrote %s (%s)\n", target, catalog.Digest(archive))
	if !o.Index {
		return target, nil
	}
	indexPath := filepath.Join(dest, "index.yaml")
	existing, err := os.ReadFile(indexPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	index, err := helm.AddPackageToIndex(existing, archive, name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", indexPath, err)
	}
	if err := writeFile(indexPath, index); err != nil {
		return "", err
	}
	fmt.Fprintf(o.Out, "wrote %s\n", indexPath)
	return target, nil
}

// packFolder checks and packs a package folder.
func packFolder(dir string) ([]byte, *helm.PackageMetadata, error) {
	if err := checkDir(dir); err != nil {
		return nil, nil, err
	}
	if _, err := pkg.LoadDir(os.DirFS(dir)); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	for _, p := range pkg.Lint(os.DirFS(dir)) {
		if p.Severity == pkg.SeverityError {
			return nil, nil, fmt.Errorf("%s/%s: %s; run `annexctl package lint %s` for every problem", dir, p.File, p.Message, dir)
		}
	}
	archive, err := directory.PackPackageFolder(dir, catalog.Limits{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	m, err := helm.PackageMetadataOf(archive)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	return archive, m, nil
}

// PushOptions configure Push.
type PushOptions struct {
	// Source is a package folder or a package archive (.tgz).
	Source string
	// Destination is oci://<registry>/<repository>; the package goes to
	// <repository>/<name>:<operatorVersion>.
	Destination string
	// PlainHTTP talks HTTP to a registry on this machine.
	PlainHTTP bool
	// Remote are go-containerregistry options, such as credentials.
	Remote []remote.Option
	// SignKey is a PEM private key file; when set, the pushed manifest is
	// signed as cosign signs (oci.PushSignature). SignKeyPassword decrypts
	// a cosign encrypted key.
	SignKey         string
	SignKeyPassword []byte
	Out             io.Writer
}

// Push stores a package in an OCI registry as the artifact an OCI catalog
// reads (oci.PushPackage), tagged with its operatorVersion, and prints
// the pushed reference. A folder is packed as Package packs it; an archive
// must be one the package engine reads.
func Push(ctx context.Context, o PushOptions) error {
	st, err := os.Stat(o.Source)
	if err != nil {
		return err
	}
	var archive []byte
	if st.IsDir() {
		if archive, _, err = packFolder(o.Source); err != nil {
			return err
		}
	} else {
		if st.Size() > catalog.DefaultMaxArchiveBytes {
			return fmt.Errorf("%s: %d bytes is more than the limit of %d bytes for a package archive", o.Source, st.Size(), catalog.DefaultMaxArchiveBytes)
		}
		if archive, err = os.ReadFile(o.Source); err != nil {
			return err
		}
		if _, err := pkg.LoadArchive(archive); err != nil {
			return fmt.Errorf("%s: %w", o.Source, err)
		}
	}
	po := oci.PushOptions{PlainHTTP: o.PlainHTTP, Remote: o.Remote}
	var fingerprint string
	if o.SignKey != "" {
		key, err := os.ReadFile(o.SignKey)
		if err != nil {
			return fmt.Errorf("--sign-key: %w", err)
		}
		// A key that cannot sign is refused before anything is pushed.
		if fingerprint, err = verify.SigningKeyFingerprint(key, o.SignKeyPassword); err != nil {
			return fmt.Errorf("--sign-key %s: %w", o.SignKey, err)
		}
		po.Sign = &oci.SignOptions{Key: key, Password: o.SignKeyPassword}
	}
	ref, err := oci.PushPackage(ctx, archive, o.Destination, po)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Source, err)
	}
	fmt.Fprintf(o.Out, "pushed %s\n", ref)
	if fingerprint != "" {
		fmt.Fprintf(o.Out, "signed it with key %s (cosign layout: tag %s)\n", fingerprint, verify.SignatureTag(ref[strings.LastIndex(ref, "@")+1:]))
	}
	return nil
}

// checkDir says clearly when a package folder is not one.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a folder; give the package folder (holding operator.yaml)", dir)
	}
	return nil
}

// writeFile writes data to p through a temporary file and a rename, so
// that a reader never sees half an archive or index.
func writeFile(p string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".annexctl-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}
