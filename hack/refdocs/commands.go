package refdocs

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Commands is the reference of the command tree under root: a table of
// contents, then one section per available command (hidden, deprecated
// and help commands are left out) with its usage, aliases, long help,
// examples, flags with their types and defaults, the global flags it
// inherits and its subcommands. Sections are in cobra's order, depth
// first; each heading is the command's path, so its anchor is Slug of it.
// Usage lines and examples are text blocks, not sh: they show a command's
// shape, and are not steps of a walkthrough that a test runs.
//
// cobra adds its help flag and its help and completion commands only
// when a command runs: call InitDefaultCompletionCmd on root first for
// the completion command to be listed.
func Commands(root *cobra.Command) string {
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)

	var b strings.Builder
	for _, c := range cmds {
		depth := strings.Count(c.CommandPath(), " ")
		fmt.Fprintf(&b, "%s- [%s](#%s): %s\n", strings.Repeat("  ", depth), c.CommandPath(), Slug(c.CommandPath()), Inline(c.Short))
	}
	b.WriteString("\nEvery command also takes `-h`, `--help`.\n\n")
	for _, c := range cmds {
		writeCommand(&b, c)
	}
	return b.String()
}

func writeCommand(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "## %s\n\n", c.CommandPath())
	if c.Short != "" {
		b.WriteString(Inline(c.Short) + "\n\n")
	}
	if c.Runnable() {
		b.WriteString(Block("text", c.UseLine()))
	}
	if len(c.Aliases) > 0 {
		b.WriteString("Aliases: " + codeList(c.Aliases) + "\n\n")
	}
	if c.Long != "" {
		b.WriteString(Prose(c.Long))
	}
	if c.Example != "" {
		b.WriteString("Examples:\n\n" + Block("text", c.Example))
	}
	if rows := flagRows(c.LocalFlags()); len(rows) > 0 {
		b.WriteString(Table([]string{"Flag", "Type", "Default", "Description"}, rows))
	}
	var inherited []string
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" {
			inherited = append(inherited, "--"+f.Name)
		}
	})
	if len(inherited) > 0 {
		root := c.Root().CommandPath()
		fmt.Fprintf(b, "Global flags (see [%s](#%s)): %s.\n\n", root, Slug(root), codeList(inherited))
	}
	var subs []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			subs = append(subs, fmt.Sprintf("[%s](#%s)", sub.CommandPath(), Slug(sub.CommandPath())))
		}
	}
	if len(subs) > 0 {
		b.WriteString("Commands: " + strings.Join(subs, ", ") + ".\n\n")
	}
}

// Flags is the table of the flags of fs (hidden ones and help left out).
func Flags(fs *pflag.FlagSet) string {
	return Table([]string{"Flag", "Type", "Default", "Description"}, flagRows(fs))
}

// flagRows is one row per visible flag of fs, sorted by name: the flag
// with its shorthand and whether it is required, its value type, its
// default, its usage.
func flagRows(fs *pflag.FlagSet) [][]string {
	var rows [][]string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" || f.Deprecated != "" {
			return
		}
		name := Code("--" + f.Name)
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			name = Code("-"+f.Shorthand) + ", " + name
		}
		if req := f.Annotations[cobra.BashCompOneRequiredFlag]; len(req) > 0 && req[0] == "true" {
			name += " (required)"
		}
		rows = append(rows, []string{name, f.Value.Type(), defaultValue(f), Inline(f.Usage)})
	})
	return rows
}

// defaultValue is the flag's default as typed on a command line; empty
// for an empty string or list.
func defaultValue(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "[]":
		return ""
	}
	return Code(f.DefValue)
}
