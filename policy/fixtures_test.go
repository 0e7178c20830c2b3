package policy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// archive is a txtar archive: a comment, then files that each start with a "-- name --" line.
type archive struct {
	comment string
	files   map[string]string
	order   []string
}

// parseTxtar reads the txtar format (golang.org/x/tools/txtar is not available here).
func parseTxtar(data string) *archive {
	a := &archive{files: map[string]string{}}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur == "" {
			a.comment = b.String()
		} else {
			a.files[cur] = b.String()
			a.order = append(a.order, cur)
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(data, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			cur = strings.TrimSpace(trimmed[3 : len(trimmed)-3])
			continue
		}
		b.WriteString(line)
	}
	flush()
	return a
}

func TestParseTxtar(t *testing.T) {
	a := parseTxtar("note\n-- a --\nx\n-- b.json --\n{}\n")
	if a.comment != "note\n" || a.files["a"] != "x\n" || a.files["b.json"] != "{}\n" || len(a.order) != 2 {
		t.Fatalf("%+v", a)
	}
}

// fixtureCase is one line of a fixture's "cases" file.
type fixtureCase struct {
	Req     Request `json:"req"`
	Verdict string  `json:"verdict"`
	Rule    string  `json:"rule"`    // exact, when given
	Reason  string  `json:"reason"`  // substring
	Warning string  `json:"warning"` // substring
	Choices string  `json:"choices"` // "once,session,deny", when given
}

// TestFixtures runs testdata/*.txtar: settings files, a state and requests with their expected decisions.
//
// Files: "state" (lines "root DIR", "home DIR", "userhome DIR", "output DIR", "mode MODE", "trusted",
// "session RULE"), optional "managed-policy.json", "home-policy.json", "settings.json" (the user's),
// "project-settings.json", and "cases" (one JSON object per line, see fixtureCase).
func TestFixtures(t *testing.T) {
	names, _ := filepath.Glob("testdata/*.txtar")
	if len(names) < 5 {
		t.Fatalf("only %d fixtures", len(names))
	}
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			a := parseTxtar(string(data))
			st := fixtureState(t, a)
			sc := bufio.NewScanner(strings.NewReader(a.files["cases"]))
			n := 0
			for line := 1; sc.Scan(); line++ {
				text := strings.TrimSpace(sc.Text())
				if text == "" || strings.HasPrefix(text, "#") {
					continue
				}
				n++
				var c fixtureCase
				dec := json.NewDecoder(strings.NewReader(text))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&c); err != nil {
					t.Fatalf("cases line %d: %v", line, err)
				}
				d := Decide(c.Req, st)
				var cs []string
				for _, ch := range d.Choices {
					cs = append(cs, string(ch))
				}
				switch {
				case d.Verdict.String() != c.Verdict,
					c.Rule != "" && d.Rule != c.Rule,
					!strings.Contains(d.Reason, c.Reason),
					!strings.Contains(d.Warning, c.Warning),
					c.Choices != "" && strings.Join(cs, ",") != c.Choices:
					t.Errorf("cases line %d: %s\n  got  %v rule=%q reason=%q warning=%q choices=%v", line, text,
						d.Verdict, d.Rule, d.Reason, d.Warning, cs)
				}
			}
			if n == 0 {
				t.Fatal("no cases")
			}
		})
	}
}

func fixtureState(t *testing.T, a *archive) *State {
	st := &State{}
	for _, line := range strings.Split(a.files["state"], "\n") {
		key, val, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch key {
		case "":
		case "root":
			st.Root = val
		case "home":
			st.Home = val
		case "userhome":
			st.UserHome = val
		case "output":
			st.OutputDir = val
		case "mode":
			st.Mode = Mode(val)
		case "trusted":
			st.ProjectTrusted = true
		case "session":
			r, err := ParseRule(val)
			if err != nil {
				t.Fatalf("state: %v", err)
			}
			st.SessionRules = append(st.SessionRules, r)
		default:
			t.Fatalf("state: unknown key %q", key)
		}
	}
	load := func(file, path string) *Settings {
		data, ok := a.files[file]
		if !ok {
			return nil
		}
		s, err := ParseSettings(path, []byte(data))
		if err != nil {
			if strings.HasSuffix(file, "policy.json") {
				st.TeamErr = err // as the broker does: a broken team policy fails closed
				return nil
			}
			t.Fatalf("%s: %v", file, err)
		}
		return s
	}
	managed := load("managed-policy.json", "/etc/garuda/policy.json")
	home := load("home-policy.json", st.Home+"/policy.json")
	st.Team = MergeTeam(managed, home)
	st.User = load("settings.json", st.Home+"/settings.json")
	st.Project = load("project-settings.json", st.Root+"/.garuda/settings.json")
	return st
}
