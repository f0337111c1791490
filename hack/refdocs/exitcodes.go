package refdocs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ExitCode is one exit code of a command and what it means.
type ExitCode struct {
	Name    string // the Go constant
	Code    int
	Meaning string // its doc comment, without the leading "Name: "
}

// ExitCodes reads the exit codes declared in the Go package in dir: the
// constants named prefix* with an integer literal value, in declaration
// order, with their doc comments. A constant without a doc comment is an
// error: every exit code must say what it means.
func ExitCodes(dir, prefix string) ([]ExitCode, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var codes []ExitCode
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				found, err := exitCodes(fset, spec.(*ast.ValueSpec), prefix)
				if err != nil {
					return nil, err
				}
				codes = append(codes, found...)
			}
		}
	}
	if len(codes) == 0 {
		return nil, fmt.Errorf("%s declares no constant %s*", dir, prefix)
	}
	return codes, nil
}

// exitCodes are the constants named prefix* of one const spec.
func exitCodes(fset *token.FileSet, vs *ast.ValueSpec, prefix string) ([]ExitCode, error) {
	var codes []ExitCode
	for i, name := range vs.Names {
		if !strings.HasPrefix(name.Name, prefix) || i >= len(vs.Values) {
			continue
		}
		lit, ok := vs.Values[i].(*ast.BasicLit)
		if !ok || lit.Kind != token.INT {
			return nil, fmt.Errorf("%s: %s is not an integer literal", fset.Position(name.Pos()), name.Name)
		}
		code, err := strconv.Atoi(lit.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", fset.Position(name.Pos()), name.Name, err)
		}
		meaning := strings.TrimSpace(vs.Doc.Text())
		if meaning == "" {
			return nil, fmt.Errorf("%s: exit code %s has no doc comment saying what it means", fset.Position(name.Pos()), name.Name)
		}
		codes = append(codes, ExitCode{Name: name.Name, Code: code, Meaning: strings.TrimPrefix(meaning, name.Name+": ")})
	}
	return codes, nil
}

// ExitCodesTable is the table of codes: code and meaning.
func ExitCodesTable(codes []ExitCode) string {
	var rows [][]string
	for _, c := range codes {
		rows = append(rows, []string{strconv.Itoa(c.Code), Cell(c.Meaning)})
	}
	return Table([]string{"Code", "Meaning"}, rows)
}
