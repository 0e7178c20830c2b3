package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docsText is README.md and docs/*.md, joined.
func docsText(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob("../docs/*.md")
	files = append(files, "../README.md")
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// helpOf is what a binary prints for --help, stdout and stderr.
func helpOf(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--help")...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GARUDA_HOME=" + t.TempDir(), "HOME=" + t.TempDir()}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

var flagRE = regexp.MustCompile(`(?m)^  --?([a-z][a-z-]*)`)

// The documented subcommands, flags and GARUDA_* variables are the code's, both ways: every subcommand and flag of
// garuda and garuda-exec is documented, every --flag the docs name exists (or is another program's, listed here),
// and every GARUDA_* variable the code reads for users is documented and no other.
func TestDocsMatchTheCode(t *testing.T) {
	needBins(t)
	docs := docsText(t)
	commands := map[string][]string{
		bins.garuda: {"acp", "run", "setup", "doctor", "trust", "undo", "audit verify", "version"},
		bins.exec:   {"serve", "doctor", "version"},
	}
	codeFlags := map[string]bool{"help": true, "version": true}
	for bin, cmds := range commands {
		top := helpOf(t, bin)
		for _, c := range cmds {
			name := filepath.Base(bin) + " " + c
			if !strings.Contains(top, "  "+c) && !strings.Contains(top, "  "+strings.Fields(c)[0]) {
				t.Errorf("%s --help does not list %q:\n%s", filepath.Base(bin), c, top)
			}
			if !strings.Contains(docs, name) {
				t.Errorf("the docs never mention `%s`", name)
			}
			for _, m := range flagRE.FindAllStringSubmatch(helpOf(t, bin, strings.Fields(c)...), -1) {
				codeFlags[m[1]] = true
				if !strings.Contains(docs, "--"+m[1]) {
					t.Errorf("the docs never mention %s's flag --%s", name, m[1])
				}
			}
		}
	}
	// Flags of other programs the docs show (systemctl, sha256sum, useradd, go, npm, git, git rebase, pre-commit ...).
	others := []string{"user", "system", "now", "ignore-missing", "user-group", "shell", "home-dir", "value",
		"make-acp-client", "global", "config", "skip"}
	for _, m := range regexp.MustCompile(`--([a-z][a-z-]*)`).FindAllStringSubmatch(docs, -1) {
		if !codeFlags[m[1]] && !slices.Contains(others, m[1]) {
			t.Errorf("the docs name --%s, which neither garuda nor garuda-exec has", m[1])
		}
	}
	// The GARUDA_* variables users may set: read by the code (outside tests), and documented; no others.
	out, err := exec.Command("grep", "-rhoE", `Getenv\("GARUDA_[A-Z_]+"\)`, "--include=*.go", "--exclude=*_test.go",
		"../frontend", "../broker", "../cmd").Output()
	if err != nil {
		t.Fatalf("grep: %v", err)
	}
	read := regexp.MustCompile(`GARUDA_[A-Z_]+`).FindAllString(string(out), -1)
	users := []string{"GARUDA_HOME", "GARUDA_MODEL", "GARUDA_BROKER"}
	for _, v := range users {
		if !strings.Contains(docs, "`"+v+"`") || !slices.Contains(read, v) {
			t.Errorf("%s: documented %v, read by the code %v", v, strings.Contains(docs, "`"+v+"`"), slices.Contains(read, v))
		}
	}
	for _, v := range read {
		if !slices.Contains(users, v) {
			t.Errorf("the code reads %s, which the docs do not list for users", v)
		}
	}
	// GARUDA_EXEC_CLIENTS is the system unit's own variable (deploy/garuda-exec@.service); GARUDA_PROJECT_DIR is set
	// for hooks, not read.
	for _, m := range regexp.MustCompile(`GARUDA_[A-Z_]+`).FindAllString(docs, -1) {
		if !slices.Contains(users, m) && m != "GARUDA_EXEC_CLIENTS" && m != "GARUDA_PROJECT_DIR" {
			t.Errorf("the docs name %s, which the code does not read", m)
		}
	}
}
