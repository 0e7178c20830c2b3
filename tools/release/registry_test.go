package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The checker has teeth: each of the registry's rules, broken on its own in an entry that otherwise passes, is
// reported. (TestReleaseFollowsRegistryRules runs the same checker on a real release.)

// entryMap is the generated agent.json of testVersion as a JSON object, for a test to break.
func entryMap(t *testing.T) map[string]any {
	t.Helper()
	sums := map[string]string{}
	for _, p := range platforms {
		sums[p.archive(testVersion)] = strings.Repeat("ab", 32)
	}
	data, err := json.Marshal(newEntry(testVersion, sums))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func target(m map[string]any, plat string) map[string]any {
	return m["distribution"].(map[string]any)["binary"].(map[string]any)[plat].(map[string]any)
}

func TestAgentJSONRules(t *testing.T) {
	if problems := checkAgentJSON("garuda", mustJSON(t, entryMap(t))); len(problems) > 0 {
		t.Fatalf("the generated entry breaks the rules: %v", problems)
	}
	for _, c := range []struct {
		name    string
		dir     string
		breakIt func(m map[string]any)
		want    string
	}{
		{"no description", "garuda", func(m map[string]any) { delete(m, "description") }, `missing required field "description"`},
		{"no distribution", "garuda", func(m map[string]any) { delete(m, "distribution") }, `missing required field "distribution"`},
		{"upper-case id", "Garuda", func(m map[string]any) { m["id"] = "Garuda" }, "lowercase letters, digits and hyphens"},
		{"id starts with a digit", "1garuda", func(m map[string]any) { m["id"] = "1garuda" }, "starting with a letter"},
		{"id is not the folder", "garuda", func(m map[string]any) { m["id"] = "garuda-go" }, `must match its folder's name "garuda"`},
		{"two-part version", "garuda", func(m map[string]any) { m["version"] = "0.16" }, "is not a semantic version"},
		{"pre-release version", "garuda", func(m map[string]any) { m["version"] = "0.16.0-rc.1" }, "is not a semantic version"},
		{"version not a string", "garuda", func(m map[string]any) { m["version"] = 16 }, "version must be a string"},
		{"empty name", "garuda", func(m map[string]any) { m["name"] = "" }, "name is empty"},
		{"relative repository", "garuda", func(m map[string]any) { m["repository"] = "github.com/garuda-dev/garuda" }, "not an absolute URL"},
		{"authors a string", "garuda", func(m map[string]any) { m["authors"] = "me" }, "authors must be a list of strings"},
		{"misspelt field", "garuda", func(m map[string]any) { m["licence"] = "MIT" }, `unknown field "licence"`},
		{"empty distribution", "garuda", func(m map[string]any) { m["distribution"] = map[string]any{} }, "at least one method"},
		{"unknown distribution", "garuda", func(m map[string]any) {
			m["distribution"].(map[string]any)["docker"] = map[string]any{}
		}, `unknown distribution type "docker"`},
		{"npx at latest", "garuda", func(m map[string]any) {
			m["distribution"].(map[string]any)["npx"] = map[string]any{"package": "@garuda/garuda@latest"}
		}, "uses @latest"},
		{"unknown platform", "garuda", func(m map[string]any) {
			m["distribution"].(map[string]any)["binary"].(map[string]any)["linux-riscv64"] = target(m, "linux-x86_64")
		}, "linux-riscv64: unknown platform"},
		{"installer archive", "garuda", func(m map[string]any) {
			target(m,
				"darwin-aarch64")["archive"] = "https://example.com/garuda.pkg"
		}, "installer format"},
		{"latest archive", "garuda", func(m map[string]any) {
			target(m, "linux-x86_64")["archive"] = repository + "/releases/latest/download/garuda-linux-x86_64.tar.gz"
		}, "uses /latest/"},
		{"archive of another version", "garuda", func(m map[string]any) {
			target(m, "linux-x86_64")["archive"] = downloadURL("0.15.2", "garuda-0.15.2-linux-x86_64.tar.gz")
		}, "is of version 0.15.2, the entry's is " + testVersion},
		{"short sha256", "garuda", func(m map[string]any) { target(m, "linux-x86_64")["sha256"] = "abc" }, "sha256 must be 64 hex digits"},
		{"no cmd", "garuda", func(m map[string]any) { delete(target(m, "linux-x86_64"), "cmd") }, "missing cmd"},
		{"no archive", "garuda", func(m map[string]any) { delete(target(m, "linux-x86_64"), "archive") }, "missing archive"},
		{"unknown target field", "garuda", func(m map[string]any) { target(m, "linux-x86_64")["checksum"] = "x" }, `unknown field "checksum"`},
		{"args a string", "garuda", func(m map[string]any) { target(m, "linux-x86_64")["args"] = "acp" }, "args must be a list of strings"},
		{"env of numbers", "garuda", func(m map[string]any) { target(m, "linux-x86_64")["env"] = map[string]any{"A": 1} },
			"env must map names to strings"},
		{"no Windows build", "garuda", func(m map[string]any) {
			delete(m["distribution"].(map[string]any)["binary"].(map[string]any), "windows-x86_64")
		}, "no build for windows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := entryMap(t)
			c.breakIt(m)
			problems := checkAgentJSON(c.dir, mustJSON(t, m))
			if !containsProblem(problems, c.want) {
				t.Fatalf("problems %q, want one saying %q", problems, c.want)
			}
		})
	}
	if p := checkAgentJSON("garuda", []byte(`{"id":`)); !containsProblem(p, "not valid JSON") {
		t.Errorf("truncated JSON: %q", p)
	}
}

func TestIconRules(t *testing.T) {
	svg := string(icon)
	if problems := checkIcon(icon); len(problems) > 0 {
		t.Fatalf("the icon breaks the rules: %v", problems)
	}
	for _, ok := range []string{
		strings.Replace(svg, `width="16" height="16"`, `width="16px" height="16px"`, 1),
		strings.Replace(svg, `fill="currentColor"`, `fill="CurrentColor" stroke="none"`, 1),
		strings.Replace(svg, `width="16" height="16" `, "", 1), // the viewBox alone gives the size
	} {
		if problems := checkIcon([]byte(ok)); len(problems) > 0 {
			t.Errorf("an icon the registry accepts is refused: %v\n%s", problems, ok)
		}
	}
	for _, c := range []struct{ name, svg, want string }{
		{"hex fill", strings.Replace(svg, `fill="currentColor"`, `fill="#FF0000"`, 1), `fill "#FF0000": only currentColor, none or inherit`},
		{"named stroke", strings.Replace(svg, `<path `, `<path stroke="red" `, 1), `stroke "red"`},
		{"inline style", strings.Replace(svg, `<path `, `<path style="opacity:1; fill: rgb(0,0,0)" `, 1), `style fill`},
		{"style element", strings.Replace(svg, `<path `, `<style>path { stroke: #123456 }</style><path `, 1), `<style> stroke "#123456"`},
		{"comment", strings.Replace(svg, `<path `, `<!-- a bird --><path `, 1), "has a comment"},
		{"24 pixels", strings.NewReplacer(`width="16" height="16"`, `width="24" height="24"`, `0 0 16 16`,
			`0 0 24 24`).Replace(svg), "24x24, want 16x16"},
		{"not square", strings.Replace(svg, `height="16"`, `height="12"`, 1), "not square (16x12)"},
		{"no currentColor", strings.Replace(svg, `fill="currentColor"`, `fill="none"`, 1), "uses no currentColor"},
		{"no size", strings.NewReplacer(`width="16" height="16" `, "", `viewBox="0 0 16 16"`, "").Replace(svg),
			"no width and height, and no viewBox"},
		{"not svg", `<g xmlns="http://www.w3.org/2000/svg"><path fill="currentColor" d="M0 0h16v16z"/></g>`, "the root element is <g>"},
		{"not XML", strings.TrimSuffix(strings.TrimSpace(svg), "</svg>"), "not valid XML"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if problems := checkIcon([]byte(c.svg)); !containsProblem(problems, c.want) {
				t.Fatalf("problems %q, want one saying %q\n%s", problems, c.want, c.svg)
			}
		})
	}
}

// fakeDist writes a release of small stand-in archives, with their sums and the entry, that passes checkRelease.
func fakeDist(t *testing.T) string {
	t.Helper()
	dist := t.TempDir()
	sums := map[string]string{}
	for _, p := range platforms {
		name := p.archive(testVersion)
		var members []member
		for _, prog := range p.programs() {
			members = append(members, member{name: p.exe(prog), mode: 0o755, data: []byte(prog + " for " + p.name)})
		}
		data := fakeArchive(t, p, members)
		if err := os.WriteFile(filepath.Join(dist, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(data)
		sums[name] = hex.EncodeToString(h[:])
	}
	if err := os.WriteFile(filepath.Join(dist, sumsFile), formatSums(sums), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeEntry(filepath.Join(dist, entryDir), testVersion, sums); err != nil {
		t.Fatal(err)
	}
	return dist
}

// fakeArchive is an archive for p of members.
func fakeArchive(t *testing.T, p platform, members []member) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	if p.goos == "windows" {
		err = writeZip(&buf, members, time.Unix(0, 0))
	} else {
		err = writeTarGz(&buf, members, time.Unix(0, 0))
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// editEntry changes the agent.json of dist.
func editEntry(t *testing.T, dist string, edit func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dist, entryDir, "agent.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if err := os.WriteFile(path, mustJSON(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Garuda's own rules: every archive is listed with its exact URL, command and SHA-256, and the sums file agrees.
func TestReleaseRules(t *testing.T) {
	if problems := checkRelease(fakeDist(t), testVersion); len(problems) > 0 {
		t.Fatalf("a whole release is refused: %v", problems)
	}
	linux := platforms[0].archive(testVersion)
	for _, c := range []struct {
		name    string
		breakIt func(dist string)
		want    string
	}{
		{"archive changed after the sums", func(dist string) {
			os.WriteFile(filepath.Join(dist, linux), []byte("another archive"), 0o644)
		}, sumsFile + ": " + linux + " says"},
		{"a Linux archive without the sandbox's helper", func(dist string) {
			data := fakeArchive(t, platforms[0], []member{{name: "garuda", mode: 0o755}, {name: "garuda-exec", mode: 0o755}})
			os.WriteFile(filepath.Join(dist, linux), data, 0o644)
		}, linux + ": no garuda-sandbox in the archive"},
		{"sha256 of another archive", func(dist string) {
			editEntry(t, dist, func(m map[string]any) { target(m, "linux-x86_64")["sha256"] = strings.Repeat("0", 64) })
		}, "distribution.binary.linux-x86_64.sha256"},
		{"archive of another repository", func(dist string) {
			editEntry(t, dist, func(m map[string]any) {
				target(m, "linux-x86_64")["archive"] = "https://github.com/someone/garuda/releases/download/v" + testVersion + "/" + linux
			})
		}, "distribution.binary.linux-x86_64.archive"},
		{"cmd without ./", func(dist string) {
			editEntry(t, dist, func(m map[string]any) { target(m, "linux-x86_64")["cmd"] = "garuda" })
		}, `distribution.binary.linux-x86_64.cmd is "garuda", want "./garuda"`},
		{"windows cmd without .exe", func(dist string) {
			editEntry(t, dist, func(m map[string]any) { target(m, "windows-x86_64")["cmd"] = "./garuda" })
		}, `want "./garuda.exe"`},
		{"other args", func(dist string) {
			editEntry(t, dist, func(m map[string]any) { target(m, "linux-x86_64")["args"] = []any{"serve"} })
		}, "args is [\"serve\"], want [acp]"},
		{"a platform left out", func(dist string) {
			editEntry(t, dist, func(m map[string]any) {
				delete(m["distribution"].(map[string]any)["binary"].(map[string]any), "linux-aarch64")
			})
		}, "no binary for linux-aarch64"},
		{"a platform not built", func(dist string) {
			editEntry(t, dist, func(m map[string]any) {
				m["distribution"].(map[string]any)["binary"].(map[string]any)["windows-aarch64"] = target(m, "windows-x86_64")
			})
		}, "a binary for windows-aarch64, which the release does not build"},
		{"a sum for no archive", func(dist string) {
			f, _ := os.OpenFile(filepath.Join(dist, sumsFile), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(strings.Repeat("1", 64) + "  garuda-" + testVersion + "-plan9-x86_64.tar.gz\n")
			f.Close()
		}, "lists garuda-" + testVersion + "-plan9-x86_64.tar.gz"},
		{"description silent on the platform", func(dist string) {
			editEntry(t, dist, func(m map[string]any) { m["description"] = "A coding agent." })
		}, "does not say where Garuda runs"},
		{"other license", func(dist string) {
			editEntry(t, dist, func(m map[string]any) { m["license"] = "MIT" })
		}, `license is "MIT", want "Apache-2.0"`},
		{"other version", func(dist string) {
			editEntry(t, dist, func(m map[string]any) { m["version"] = "0.16.1" })
		}, `version is "0.16.1", want "` + testVersion + `"`},
		{"no icon", func(dist string) {
			os.Remove(filepath.Join(dist, entryDir, "icon.svg"))
		}, "the registry requires an icon"},
		{"no sums", func(dist string) {
			os.Remove(filepath.Join(dist, sumsFile))
		}, sumsFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			dist := fakeDist(t)
			c.breakIt(dist)
			if problems := checkRelease(dist, testVersion); !containsProblem(problems, c.want) {
				t.Fatalf("problems %q, want one saying %q", problems, c.want)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func containsProblem(problems []string, want string) bool {
	for _, p := range problems {
		if strings.Contains(p, want) {
			return true
		}
	}
	return false
}
