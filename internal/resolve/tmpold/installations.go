package resolve

import "github.com/annex-platform/annex/api/v1alpha1"

// ProblemFor states a cluster's installations for the solver: each one's
// range, installed version and upgrade policy (automatic upgrades default to
// on, as in the API).
func ProblemFor(clusterVersion string, insts []*v1alpha1.ExtensionInstallation) Problem {
	p := Problem{ClusterVersion: clusterVersion, Installations: make([]Installation, 0, len(insts))}
	for _, inst := range insts {
		p.Installations = append(p.Installations, Installation{
			Name:           inst.Namespace + "/" + inst.Name,
			Extension:      inst.Spec.Extension,
			Range:          inst.Spec.Version,
			Installed:      inst.Status.InstalledVersion,
			Automatic:      inst.Spec.Upgrade.Automatic == nil || *inst.Spec.Upgrade.Automatic,
			AllowDowngrade: inst.Spec.Upgrade.AllowDowngrade,
		})
	}
	return p
}

// UniverseOf collects the versions of Extensions.
func UniverseOf(extensions []v1alpha1.Extension) Universe {
	u := make(Universe, len(extensions))
	for i := range extensions {
		u[extensions[i].Name] = extensions[i].Spec.Versions
	}
	return u
}
