package confine

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The test binary re-runs itself as the confined process: it confines itself with Self, then tries what a
// talked-into front end would try and prints what happened.
func TestMain(m *testing.M) {
	if attempt := os.Getenv("GARUDA_CONFINE_ATTEMPT"); attempt != "" {
		if os.Getenv("GARUDA_CONFINE_SKIP") == "" {
			if _, err := Self(); err != nil {
				fmt.Println("confine failed:", err)
				os.Exit(3)
			}
		}
		fmt.Println(try(attempt))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func try(attempt string) string {
	kind, arg, _ := strings.Cut(attempt, ":")
	var err error
	switch kind {
	case "write":
		var f *os.File
		if f, err = os.OpenFile(arg, os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
			f.Close()
		}
	case "read":
		_, err = os.ReadFile(arg)
	case "exec":
		err = exec.Command(arg).Run()
	case "tls":
		var pool *x509.CertPool
		if pool, err = x509.SystemCertPool(); err == nil && pool.Equal(x509.NewCertPool()) {
			err = errors.New("no TLS roots")
		}
	}
	if err != nil {
		return "refused: " + err.Error()
	}
	return "done"
}

func attempt(t *testing.T, what string, confined bool) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GARUDA_CONFINE_ATTEMPT="+what)
	if !confined {
		cmd.Env = append(cmd.Env, "GARUDA_CONFINE_SKIP=1")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The confined front end cannot write, execute, or read Garuda's credentials; each attempt works without the
// confinement (the negative control).
func TestSelfTakesFileAndExecPowerAway(t *testing.T) {
	home := t.TempDir()
	creds := filepath.Join(home, "credentials")
	os.WriteFile(creds, []byte(`{"anthropic":"sk-test"}`), 0o600)
	for _, what := range []string{
		"write:" + filepath.Join(t.TempDir(), "planted"),
		"read:" + creds,
		"exec:/bin/true",
	} {
		if got := attempt(t, what, false); got != "done" {
			t.Fatalf("control %s without confinement: %s", what, got)
		}
		if got := attempt(t, what, true); !strings.HasPrefix(got, "refused") {
			t.Errorf("%s after Self: %s", what, got)
		}
	}
	// The TLS roots load after confinement (the front end reads them at its first HTTPS request).
	if got := attempt(t, "tls", true); got != "done" {
		t.Errorf("TLS roots after Self: %s", got)
	}
	// What DNS needs stays readable.
	if _, err := os.Stat("/etc/hosts"); err == nil {
		if got := attempt(t, "read:/etc/hosts", true); got != "done" {
			t.Errorf("/etc/hosts after Self: %s", got)
		}
	}
}
