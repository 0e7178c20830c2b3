package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/frontend/brokerconn"
	"github.com/garuda-dev/garuda/frontend/model"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// setup chooses a provider and a model and stores the key, through the broker. Exit 0 means done: editors run
// `garuda acp setup` for Terminal Auth and read only the exit code.
func setup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	provider := fs.String("provider", "", "provider name (anthropic, openai, or one from models.json)")
	model := fs.String("model", "", "default model name")
	keyStdin := fs.Bool("key-stdin", false, "read the API key from standard input (for scripts)")
	test := fs.Bool("test", false, "test the key with one tiny request after saving it (asked on a terminal)")
	force := fs.Bool("force", false, "store a model id that Garuda does not know for the provider (a newer model)")
	addr := brokerFlag(fs)
	synopsis := "setup [--provider P] [--model M] [--key-stdin] [--test] [--force] [--broker unix://PATH]"
	if err := parseFlagsNoArgs(fs, args, synopsis); err != nil {
		return err
	}
	b, err := connect(ctx, *addr)
	if err != nil {
		return err
	}
	defer b.Close()
	opts, err := b.Client.SetupOptions(ctx, &execv1.SetupOptionsRequest{})
	if err != nil {
		return fmt.Errorf("setup: %w", brokerconn.Words(err))
	}
	in := bufio.NewReader(os.Stdin)
	tty := isTerminal(0)
	if *provider == "" {
		if !tty {
			return errors.New("setup: give --provider (and --model, --key-stdin) when not on a terminal")
		}
		fmt.Fprintln(os.Stderr, "Providers:")
		for i, p := range opts.Providers {
			fmt.Fprintf(os.Stderr, "  %d. %s (key in %s)\n", i+1, p.Name, p.KeyEnv)
		}
		fmt.Fprint(os.Stderr, "Choose a provider [1]: ")
		s, err := readLine(in)
		if err != nil {
			return fmt.Errorf("setup: %w", brokerconn.Words(err))
		}
		i := 1
		if s != "" {
			if i, err = strconv.Atoi(s); err != nil || i < 1 || i > len(opts.Providers) {
				return fmt.Errorf("setup: %q is not one of the choices", s)
			}
		}
		*provider = opts.Providers[i-1].Name
	}
	var chosen *execv1.SetupProvider
	var known []string
	for _, p := range opts.Providers {
		known = append(known, p.Name)
		if p.Name == *provider {
			chosen = p
		}
	}
	if chosen == nil {
		return fmt.Errorf("setup: unknown provider %q; known: %s (others can be added in %s)", *provider,
			strings.Join(known, ", "), filepath.Join(opts.Home, "models.json"))
	}
	if *model == "" {
		if !tty || len(chosen.Models) == 0 {
			return errors.New("setup: give --model")
		}
		fmt.Fprintf(os.Stderr, "Models: %s\nChoose a model [%s]: ", strings.Join(chosen.Models, ", "), chosen.Models[0])
		s, err := readLine(in)
		if err != nil {
			return fmt.Errorf("setup: %w", brokerconn.Words(err))
		}
		*model = chosen.Models[0]
		if s != "" {
			*model = s
		}
	}
	var key string
	if *keyStdin || !tty {
		if key, err = readLine(in); err != nil {
			return fmt.Errorf("setup: read the key from stdin: %w", err)
		}
	} else {
		fmt.Fprintf(os.Stderr, "API key for %s (not shown): ", chosen.Name)
		key, err = readSecret(in)
		fmt.Fprintln(os.Stderr)
		if err != nil {
			return fmt.Errorf("setup: %w", brokerconn.Words(err))
		}
	}
	if key == "" {
		return errors.New("setup: no key given")
	}
	res, err := b.Client.Setup(ctx, &execv1.SetupRequest{Provider: chosen.Name, Model: *model, ApiKey: key, Force: *force})
	if err != nil {
		return fmt.Errorf("setup: %w", brokerconn.Words(err))
	}
	fmt.Fprintf(os.Stderr, "Saved the key in %s and the default model %s in %s.\n", res.CredentialsPath, *model, res.ModelsPath)
	if tty && !*keyStdin && !*test {
		fmt.Fprint(os.Stderr, "Test the key now with one tiny request? [Y/n] ")
		s, err := readLine(in)
		*test = err == nil && (s == "" || strings.EqualFold(s, "y") || strings.EqualFold(s, "yes"))
	}
	if *test {
		return testKey(ctx, b.Client, *model)
	}
	return nil
}

// testKey sends one tiny request with the saved key, through the same settings a session would use.
func testKey(ctx context.Context, c execv1.ExecServiceClient, name string) error {
	prep, err := c.Prepare(ctx, &execv1.PrepareRequest{Model: name})
	if err != nil {
		return fmt.Errorf("setup: %w", brokerconn.Words(err))
	}
	ms := prep.GetReady()
	if ms == nil {
		return fmt.Errorf("setup: %s", prep.GetAuthRequired())
	}
	client, err := model.New(model.ProviderConfig{Type: ms.Type, BaseURL: ms.BaseUrl, APIKey: ms.ApiKey,
		Model: ms.ModelId, MaxOutputTokens: 16})
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_, err = client.Stream(tctx, model.Request{MaxTokens: 16, Messages: []model.Message{{Role: model.RoleUser,
		Content: []model.Block{{Type: model.BlockText, Text: "Reply with OK."}}}}}, nopHandler{})
	if err != nil {
		return fmt.Errorf("setup: the key was saved, but the test request failed: %v; run garuda setup again with another key", err)
	}
	fmt.Fprintf(os.Stderr, "The key works: %s answered.\n", name)
	return nil
}

type nopHandler struct{}

func (nopHandler) Delta(model.DeltaKind, string) {}

// trust shows a project's settings that loosen safety and pins them on a yes.
func trust(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	yes := fs.Bool("yes", false, "trust without asking")
	addr := brokerFlag(fs)
	if err := parseFlags(fs, args, "trust [DIR] [--yes] [--broker unix://PATH]"); err != nil {
		return err
	}
	dir := "."
	if fs.NArg() > 0 {
		dir = fs.Arg(0)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	b, err := connect(ctx, *addr)
	if err != nil {
		return err
	}
	defer b.Close()
	t, err := b.Client.InspectTrust(ctx, &execv1.InspectTrustRequest{Dir: dir})
	if err != nil {
		return fmt.Errorf("trust: %w", brokerconn.Words(err))
	}
	if !t.Exists {
		fmt.Printf("%s has no project settings (%s); nothing to trust.\n", dir, t.SettingsPath)
		return nil
	}
	if t.Trusted {
		fmt.Printf("%s is already trusted as it is now.\n", t.SettingsPath)
		return nil
	}
	if len(t.Loosening) == 0 {
		fmt.Printf("%s loosens nothing; nothing to trust.\n", t.SettingsPath)
		return nil
	}
	fmt.Printf("%s loosens safety:\n", t.SettingsPath)
	for _, l := range t.Loosening {
		fmt.Printf("  - %s\n", l)
	}
	if !*yes {
		if !isTerminal(0) {
			return errors.New("trust: answer on a terminal, or pass --yes")
		}
		fmt.Print("Trust these settings for this folder? [y/N] ")
		s, err := readLine(bufio.NewReader(os.Stdin))
		if err != nil {
			return err
		}
		if s != "y" && s != "yes" {
			fmt.Println("Not trusted.")
			return exitError(1)
		}
	}
	res, err := b.Client.PinTrust(ctx, &execv1.PinTrustRequest{Dir: dir, Hash: t.Hash})
	if err != nil {
		return fmt.Errorf("trust: %w", brokerconn.Words(err))
	}
	fmt.Printf("Trusted; pinned in %s. A change of the file needs a new yes.\n", res.TrustPath)
	return nil
}

func undo(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("undo", flag.ContinueOnError)
	session := fs.String("session", "", "the session (default: the newest with changes in the current folder)")
	list := fs.Bool("list", false, "list the changes instead of undoing")
	addr := brokerFlag(fs)
	if err := parseFlagsNoArgs(fs, args, "undo [--session ID] [--list] [--broker unix://PATH]"); err != nil {
		return err
	}
	b, err := connect(ctx, *addr)
	if err != nil {
		return err
	}
	defer b.Close()
	req := &execv1.UndoRequest{SessionId: *session, List: *list}
	if *session == "" {
		// The newest session with changes in this folder, not in whichever project changed last.
		wd, err := os.Getwd()
		if err == nil {
			wd, err = filepath.EvalSymlinks(wd)
		}
		if err != nil {
			return fmt.Errorf("undo: the current folder: %w; name the session with --session", err)
		}
		req.Folder = wd
	}
	res, err := b.Client.Undo(ctx, req)
	if err != nil {
		return fmt.Errorf("undo: %w", brokerconn.Words(err))
	}
	if *list {
		fmt.Printf("session %s:\n", res.SessionId)
		for _, e := range res.Entries {
			what := "changed"
			if e.Created {
				what = "created"
			}
			fmt.Printf("  %s  %s  %s\n", e.Time, what, e.Path)
		}
		return nil
	}
	what := "restored"
	if res.Restored.GetCreated() {
		what = "removed (Garuda had created it)"
	}
	fmt.Printf("%s %s (session %s)\n", res.Restored.GetPath(), what, res.SessionId)
	return nil
}

func audit(ctx context.Context, args []string) error {
	const synopsis = "audit verify [FILE] [--broker unix://PATH]"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Printf("usage: garuda %s\n", synopsis)
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "verify" {
		return errors.New("audit: usage: garuda " + synopsis)
	}
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	addr := brokerFlag(fs)
	if err := parseFlags(fs, args[1:], synopsis); err != nil {
		return err
	}
	b, err := connect(ctx, *addr)
	if err != nil {
		return err
	}
	defer b.Close()
	file := fs.Arg(0)
	if file != "" {
		if file, err = filepath.Abs(file); err != nil {
			return err
		}
	}
	res, err := b.Client.VerifyAudit(ctx, &execv1.VerifyAuditRequest{File: file})
	if err != nil {
		return fmt.Errorf("audit verify: %w", brokerconn.Words(err))
	}
	bad := 0
	for _, f := range res.Files {
		if f.Ok {
			fmt.Printf("ok      %s (%d records)\n", f.File, f.Records)
		} else {
			bad++
			fmt.Printf("BROKEN  %s: %s\n", f.File, f.Error)
		}
	}
	if bad > 0 {
		return exitError(1)
	}
	return nil
}
