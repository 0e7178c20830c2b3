package commands

import (
	"fmt"
	"testing"
	"testing/fstest"
)

func benchFS() fstest.MapFS {
	m := fstest.MapFS{}
	for i := range 100 {
		m[fmt.Sprintf(".claude/commands/ns%d/cmd%03d.md", i%5,
			i)] = file("---\ndescription: Command number\nargument-hint: <a> <b>\nallowed-tools:\n  - Read\n  - " +
			"Grep\n---\nDo $1 with $2; all: $ARGUMENTS\n")
	}
	for i := range 20 {
		m[fmt.Sprintf(".claude/skills/skill-%02d/SKILL.md",
			i)] = file(fmt.Sprintf("---\nname: skill-%02d\ndescription: >\n  A skill\n  that does things\n---\nInstructions.\n", i))
	}
	return m
}

func BenchmarkLoad(b *testing.B) {
	m := benchFS()
	for b.Loop() {
		if _, err := Load(m, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolveCommand(b *testing.B) {
	s, _ := Load(benchFS(), nil)
	for b.Loop() {
		if r := s.Resolve(`/ns1:cmd001 "first arg" second third`); r.Kind != KindPrompt {
			b.Fatal(r)
		}
	}
}

func BenchmarkResolveUnknown(b *testing.B) {
	s, _ := Load(benchFS(), nil)
	for b.Loop() {
		if r := s.Resolve("/ns1:cmd0x1 args"); r.Kind != KindNotCommand {
			b.Fatal(r)
		}
	}
}
