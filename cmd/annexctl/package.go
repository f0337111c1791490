package main

import (
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/annex-platform/annex/internal/cli"
)

// newPackageCommand groups the commands for authors of Annex packages
// (KUDO operator packages plus extends); none of them needs a cluster.
func newPackageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "package",
		Short: "Lint, render, pack and push Annex packages (operator.yaml, params.yaml, templates/)",
	}
	cmd.AddCommand(newPackageLintCommand(), newPackageRenderCommand(), newPackagePackCommand(), newPackagePushCommand(), newPackageKeygenCommand())
	return cmd
}

func newPackageLintCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "lint DIR",
		Short: "Print the problems of a package folder, one a line; exit status 1 when one is an error",
		Example: `  annexctl package lint ./mysql
  annexctl package lint ./mysql-analytics   # references to an extended base are warnings`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cli.PackageLint(cli.PackageLintOptions{Dir: args[0], Out: cmd.OutOrStdout()})
		},
	}
}

func newPackageRenderCommand() *cobra.Command {
	o := cli.PackageRenderOptions{}
	cmd := &cobra.Command{
		Use:   "render DIR [--plan NAME] [--set NAME=VALUE ...] [--values FILE] [--base DIR ...] [--instance NAME --namespace NS] [--merged-only]",
		Short: "Print a package as it installs: the package merged onto its bases, then the objects of a plan",
		Long: `render works offline. It prints the effective package (after extends: a package
that extends a base is merged onto it; give each base of the chain with --base),
then the objects of the plan (default deploy) rendered for the given parameters,
as a YAML stream with a comment heading each phase, step and task.`,
		Example: `  annexctl package render ./mysql --set MEMORY=1Gi
  annexctl package render ./mysql-analytics --base ./mysql --plan load --values values.yaml
  annexctl package render ./mysql-analytics --base ./mysql --merged-only`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir, o.Out, o.Warnings = args[0], cmd.OutOrStdout(), cmd.ErrOrStderr()
			return cli.PackageRender(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Plan, "plan", "deploy", "the plan to render")
	f.StringArrayVar(&o.Set, "set", nil, "NAME=VALUE: a parameter value (repeatable; wins over --values)")
	f.StringVar(&o.ValuesFile, "values", "", "a YAML file of parameter values (NAME: value)")
	f.StringArrayVar(&o.Bases, "base", nil, "the folder of a base package the package extends (repeat for each package of a chain)")
	f.StringVar(&o.Instance, "instance", "", "the installation name templates see as .Name (default <package>-instance)")
	f.StringVar(&o.Namespace, "namespace", "", "the namespace templates see as .Namespace (default \"default\")")
	f.StringVar(&o.KubeVersion, "kube-version", "", "the target cluster's Kubernetes version, checked against kubernetesVersion")
	f.BoolVar(&o.MergedOnly, "merged-only", false, "print the merged package only, no plan")
	return cmd
}

func newPackagePackCommand() *cobra.Command {
	o := cli.PackageOptions{}
	cmd := &cobra.Command{
		Use:   "package DIR [--destination DIR] [--index]",
		Short: "Pack a package folder into <name>-<operatorVersion>.tgz, optionally adding it to a repository index.yaml",
		Long: `package checks that the folder reads and lints without errors and writes
<name>-<operatorVersion>.tgz: the same bytes for the same files, the bytes a
directory catalog serves for the folder. With --index it adds the archive to
index.yaml in the destination (creating it), the repository format a Helm-kind
Catalog reads; serve the destination folder over HTTP(S) to publish it.`,
		Example: `  annexctl package package ./mysql --destination ./repo --index`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir, o.Out = args[0], cmd.OutOrStdout()
			_, err := cli.Package(o)
			return err
		},
	}
	cmd.Flags().StringVar(&o.Destination, "destination", ".", "the folder the archive is written to")
	cmd.Flags().BoolVar(&o.Index, "index", false, "create or update index.yaml in the destination")
	return cmd
}

func newPackagePushCommand() *cobra.Command {
	o := cli.PushOptions{}
	cmd := &cobra.Command{
		Use:   "push DIR|TGZ oci://REGISTRY/REPOSITORY [--plain-http]",
		Short: "Push a package to an OCI registry as <repository>/<name>:<operatorVersion>, where an OCI Catalog finds it",
		Long: `push stores the package as an OCI artifact (config
application/vnd.annex.package.config.v1+json, layer
application/vnd.annex.package.content.v1.tar+gzip) at
<repository>/<name>:<operatorVersion>. Credentials come from the Docker
configuration (docker login). --plain-http is for a registry on this machine.

With --sign-key it signs the pushed manifest as cosign does (a signature at
the tag sha256-<digest>.sig), so that a Catalog whose spec.verify trusts the
key's public half installs it. The key is a PEM private key (annexctl
package keygen writes one; a cosign key works, its password in
$COSIGN_PASSWORD).`,
		Example: `  annexctl package push ./mysql oci://registry.example.com/packages
  annexctl package push mysql-0.2.0.tgz oci://localhost:5000/packages --plain-http
  annexctl package push ./mysql oci://registry.example.com/packages --sign-key release.key`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Source, o.Destination, o.Out = args[0], args[1], cmd.OutOrStdout()
			o.Remote = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
			if pw, ok := os.LookupEnv("COSIGN_PASSWORD"); ok && o.SignKey != "" {
				o.SignKeyPassword = []byte(pw)
			}
			return cli.Push(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.PlainHTTP, "plain-http", false, "use HTTP instead of HTTPS (only for localhost, 127.0.0.1 or [::1])")
	cmd.Flags().StringVar(&o.SignKey, "sign-key", "", "sign the pushed package with this PEM private key (cosign-compatible signature)")
	return cmd
}

func newPackageKeygenCommand() *cobra.Command {
	o := cli.KeygenOptions{}
	cmd := &cobra.Command{
		Use:   "keygen [PREFIX]",
		Short: "Write a key pair for signing packages: PREFIX.key (private) and PREFIX.pub (public)",
		Long: `keygen writes a new ECDSA P-256 key pair: PREFIX.key, the PEM private key
(unencrypted, mode 0600) that push --sign-key signs with, and PREFIX.pub, the
PEM public key a Catalog's spec.verify.cosign.keys trusts. PREFIX defaults to
cosign. Existing files are not overwritten without --force.`,
		Example: `  annexctl package keygen release-2026
  annexctl package push ./mysql oci://registry.example.com/packages --sign-key release-2026.key`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Prefix = args[0]
			}
			o.Out = cmd.OutOrStdout()
			return cli.Keygen(o)
		},
	}
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite existing key files")
	return cmd
}
