package attacks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/garuda-dev/garuda/broker/brokertest"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// Found by red team (first pass over the boundary).
// HELD. PinTrust pins only the hash of the folder it names: the hash shown for a harmless project does not trust
// another project's different settings. Control: the shown hash pins its own folder.
func TestRedTeamPinTrustOtherFolder(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	good := filepath.Join(t.TempDir(), "good")
	evil := filepath.Join(t.TempDir(), "evil")
	brokertest.MustWrite(t, filepath.Join(good, ".garuda", "settings.json"), `{"permissions":{"allow":["Bash(ls)"]}}`)
	brokertest.MustWrite(t, filepath.Join(evil, ".garuda", "settings.json"), `{"permissions":{"allow":["Bash(*)","write_file(**)"]}}`)
	in, err := c.InspectTrust(brokertest.Ctx(t), &execv1.InspectTrustRequest{Dir: good})
	if err != nil || in.Hash == "" {
		t.Fatalf("inspect: %v %v", in, err)
	}
	if _, err := c.PinTrust(brokertest.Ctx(t), &execv1.PinTrustRequest{Dir: evil, Hash: in.Hash}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("pinned another folder with the shown hash: %v", err)
	}
	if _, err := c.PinTrust(brokertest.Ctx(t), &execv1.PinTrustRequest{Dir: evil + "/../good/../evil", Hash: in.Hash}); err == nil {
		t.Errorf("pinned through a path trick")
	}
	if ev, _ := c.InspectTrust(brokertest.Ctx(t), &execv1.InspectTrustRequest{Dir: evil}); ev.GetTrusted() {
		t.Fatal("the other folder is trusted")
	}
	if _, err := c.PinTrust(brokertest.Ctx(t), &execv1.PinTrustRequest{Dir: good, Hash: in.Hash}); err != nil {
		t.Fatalf("control: %v", err)
	}
}

// Found by red team (second pass, as a compromised front end).
// HELD. Setup, InspectTrust and PinTrust with crafted input write nothing but their own files: provider names with
// traversal, control characters in the key, a project settings file that is a symlink out of the folder (not read,
// not pinned), a file or a relative path as the folder. Control: a plain setup and pin work.
func TestRedTeamSetupAndTrustInputs(t *testing.T) {
	e := brokertest.New(t)
	c := e.Client()
	for _, r := range []*execv1.SetupRequest{
		{Provider: "../../x", Model: "m", ApiKey: "k"}, {Provider: "anthropic/../../x", Model: "m", ApiKey: "k"},
		{Provider: "anthropic", Model: "m", ApiKey: "sk-a\nb", Force: true}, {Provider: "anthropic", Model: "", ApiKey: "k"},
	} {
		if _, err := c.Setup(brokertest.Ctx(t), r); err == nil {
			t.Errorf("Setup %q %q %q accepted", r.Provider, r.Model, r.ApiKey)
		}
	}
	odd := &execv1.SetupRequest{Provider: "anthropic", Model: "../../../etc/passwd\n", ApiKey: "sk-ok", Force: true}
	if _, err := c.Setup(brokertest.Ctx(t), odd); err != nil {
		t.Fatalf("control Setup: %v", err)
	}
	ents, _ := os.ReadDir(e.Home)
	for _, ent := range ents {
		switch ent.Name() {
		case "credentials", "models.json", "audit":
		default:
			t.Errorf("Setup made %s in $GARUDA_HOME", ent.Name())
		}
	}
	ents, _ = os.ReadDir(filepath.Dir(e.Home))
	for _, ent := range ents {
		if n := ent.Name(); n != "home" && n != "project" && n != "b.sock" {
			t.Errorf("Setup wrote %s next to $GARUDA_HOME", n)
		}
	}
	outside := filepath.Join(t.TempDir(), "settings.json")
	brokertest.MustWrite(t, outside, `{"permissions":{"allow":["Bash"]}}`)
	proj := filepath.Join(t.TempDir(), "p")
	os.MkdirAll(filepath.Join(proj, ".garuda"), 0o755)
	os.Symlink(outside, filepath.Join(proj, ".garuda", "settings.json"))
	in, err := c.InspectTrust(brokertest.Ctx(t), &execv1.InspectTrustRequest{Dir: proj})
	if err == nil && in.Exists {
		t.Errorf("InspectTrust read a settings file outside the folder: %v", in)
	}
	sum := policyHash(outside)
	if _, err := c.PinTrust(brokertest.Ctx(t), &execv1.PinTrustRequest{Dir: proj, Hash: sum}); err == nil {
		t.Error("PinTrust pinned a settings file outside the folder")
	}
	for _, d := range []string{"p", outside, proj + "/missing"} {
		if _, err := c.InspectTrust(brokertest.Ctx(t), &execv1.InspectTrustRequest{Dir: d}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("InspectTrust %q: %v", d, err)
		}
	}
	os.Remove(filepath.Join(proj, ".garuda", "settings.json"))
	brokertest.MustWrite(t, filepath.Join(proj, ".garuda", "settings.json"), `{"permissions":{"allow":["Bash(ls)"]}}`)
	in, err = c.InspectTrust(brokertest.Ctx(t), &execv1.InspectTrustRequest{Dir: proj})
	if err != nil || !in.Exists {
		t.Fatalf("control inspect: %v %v", in, err)
	}
	if _, err := c.PinTrust(brokertest.Ctx(t), &execv1.PinTrustRequest{Dir: proj, Hash: in.Hash}); err != nil {
		t.Fatalf("control pin: %v", err)
	}
}

// policyHash is the trust hash of a file's bytes.
func policyHash(p string) string {
	data, _ := os.ReadFile(p)
	return policy.TrustHash(data)
}

// Found by red team (class 1). InspectTrust (and so PinTrust) of a folder whose settings file a read rule of the
// user hides answers the same whatever the file holds and whether the folder exists: a front end cannot read a
// hidden file's content (a malformed rule is quoted), hash or existence through `garuda trust`. Control: with no
// rule, the answers differ.
func TestInspectTrustOfAHiddenFileSaysNothing(t *testing.T) {
	worlds := map[string]func(dir string){
		"missing": func(string) {},
		"no file": func(dir string) { os.MkdirAll(dir, 0o755) },
		"malformed": func(dir string) {
			brokertest.MustWrite(t, filepath.Join(dir, ".garuda", "settings.json"), `{"x": "tok-7d1e"}`)
		},
		"loosening": func(dir string) {
			brokertest.MustWrite(t, filepath.Join(dir, ".garuda", "settings.json"), `{"permissions":{"allow":["Bash(ls)"]}}`)
		},
	}
	for _, rule := range []string{"", `Read(//%s/**)`, `Read(.garuda/**)`} {
		seen := map[string]string{}
		for name, make := range worlds {
			base := t.TempDir()
			dir := filepath.Join(base, "secret")
			e := brokertest.NewIn(t, base, filepath.Join(base, "project"), filepath.Join(base, "home"))
			if rule != "" {
				e.Settings(t, `{"permissions": {"deny": ["`+strings.ReplaceAll(rule, "%s", strings.TrimPrefix(dir, "/"))+`"]}}`)
			}
			make(dir)
			c := e.Client()
			in, err := c.InspectTrust(brokertest.Ctx(t), &execv1.InspectTrustRequest{Dir: dir})
			_, perr := c.PinTrust(brokertest.Ctx(t), &execv1.PinTrustRequest{Dir: dir, Hash: in.GetHash()})
			seen[strings.ReplaceAll(fmt.Sprintf("%v %v %v", in, err, perr), base, "$BASE")] = name
		}
		switch {
		case rule != "" && len(seen) != 1:
			t.Errorf("with %s, InspectTrust depends on the hidden file:\n%v", rule, seen)
		case rule == "" && len(seen) != len(worlds):
			t.Errorf("control: with no rule, InspectTrust should tell the worlds apart:\n%v", seen)
		}
	}
}
