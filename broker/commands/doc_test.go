package commands

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestOnePackageDoc: the package doc comment lives in doc.go and nowhere else.
func TestOnePackageDoc(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var with []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			with = append(with, e.Name())
		}
	}
	if len(with) != 1 || with[0] != "doc.go" {
		t.Fatalf("package doc comments in %v, want only doc.go", with)
	}
}
