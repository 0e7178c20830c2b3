package permit

import (
	"errors"
	"testing"

	"github.com/garuda-dev/garuda/policy"
)

func state(t *testing.T, settings string) *policy.State {
	t.Helper()
	st := &policy.State{Root: "/p", Home: "/h", Mode: policy.ModeBuild}
	if settings != "" {
		s, err := policy.ParseSettings("/h/settings.json", []byte(settings))
		if err != nil {
			t.Fatal(err)
		}
		st.User = s
	}
	return st
}

func TestWhatEachDecisionPermits(t *testing.T) {
	st := state(t, `{"permissions": {"deny": ["read_file(.env)"]}}`)
	cases := []struct {
		name          string
		req           policy.Request
		verdict       policy.Verdict
		preview, acts bool
	}{
		{"a read in the project", policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: "/p/a.go"}, policy.Allow, true, true},
		{"an edit in the project asks and previews", policy.Request{Kind: policy.KindEdit, Tool: policy.OpEditFile,
			Path: "/p/a.go"}, policy.Ask, true, false},
		{"a write in the project asks and previews", policy.Request{Kind: policy.KindWrite, Tool: policy.OpWriteFile,
			Path: "/p/a.go"}, policy.Ask, true, false},
		{"an edit outside asks without a preview", policy.Request{Kind: policy.KindEdit, Tool: policy.OpEditFile,
			Path: "/tmp/x"}, policy.Ask, false, false},
		{"a protected path asks without a preview", policy.Request{Kind: policy.KindWrite, Tool: policy.OpWriteFile,
			Path: "/p/.git/config"}, policy.Ask, false, false},
		{"a write of a read-denied file asks without a preview", policy.Request{Kind: policy.KindWrite,
			Tool: policy.OpWriteFile, Path: "/p/.env"}, policy.Ask, false, false},
		{"an edit of a read-denied file is denied", policy.Request{Kind: policy.KindEdit, Tool: policy.OpEditFile,
			Path: "/p/.env"}, policy.Deny, false, false},
		{"Garuda's home", policy.Request{Kind: policy.KindEdit, Tool: policy.OpEditFile, Path: "/h/credentials"}, policy.Deny, false, false},
		{"a read outside asks", policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: "/tmp/x"}, policy.Ask, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, p := Decide(c.req, st)
			if d.Verdict != c.verdict || p.Previews() != c.preview || p.Acts() != c.acts {
				t.Fatalf("Decide = %v (%s), previews %v, acts %v; want %v, %v, %v", d.Verdict, d.Reason, p.Previews(), p.Acts(),
					c.verdict, c.preview, c.acts)
			}
			g := Granted(p)
			if want := c.verdict != policy.Deny; g.Acts() != want {
				t.Fatalf("after the user's allow, acts = %v, want %v", g.Acts(), want)
			}
		})
	}
}

func TestAPermitCoversItsOwnRequestOnly(t *testing.T) {
	st := state(t, "")
	_, p := Decide(policy.Request{Kind: policy.KindRead, Tool: policy.OpReadFile, Path: "/p/a.go"}, st)
	if err := p.CheckAct("/p/a.go", policy.KindRead); err != nil {
		t.Fatalf("the permit does not cover its own request: %v", err)
	}
	for _, bad := range []struct {
		path string
		kind policy.Kind
	}{{"/p/b.go", policy.KindRead}, {"/p/a.go", policy.KindWrite}, {"/p/../h/credentials", policy.KindRead}} {
		if err := p.CheckAct(bad.path, bad.kind); !errors.Is(err, ErrNotPermitted) {
			t.Errorf("a read permit for /p/a.go covers %s of %s: %v", bad.kind, bad.path, err)
		}
	}
	var zero Permit
	if err := zero.CheckPreview("/p/a.go", policy.KindRead); !errors.Is(err, ErrNotPermitted) {
		t.Errorf("the zero permit allows a preview: %v", err)
	}
	if Granted(zero).Acts() {
		t.Error("Granted turns the zero permit (a deny) into an act")
	}
	_, ask := Decide(policy.Request{Kind: policy.KindEdit, Tool: policy.OpEditFile, Path: "/p/a.go"}, st)
	if err := ask.CheckAct("/p/a.go", policy.KindEdit); !errors.Is(err, ErrNotPermitted) {
		t.Errorf("an unanswered ask acts: %v", err)
	}
}
