package fsops

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestOnePackageDoc keeps the package doc comment in doc.go and nowhere else.
func TestOnePackageDoc(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var with []string
	for _, e := range ents {
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
