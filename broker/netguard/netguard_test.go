package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/garuda-dev/garuda/internal/testenv"
)

func TestClassify(t *testing.T) {
	for addr, want := range map[string]Class{
		"93.184.216.34": Public, "2606:4700::1111": Public, "8.8.8.8": Public,
		"127.0.0.1": Private, "127.255.0.9": Private, "::1": Private, "10.1.2.3": Private, "172.16.0.1": Private,
		"192.168.1.1": Private, "169.254.1.1": Private, "100.64.0.1": Private, "fc00::1": Private, "fd12::1": Private,
		"fe80::1": Private, "::ffff:127.0.0.1": Private, "::ffff:10.0.0.1": Private, "64:ff9b::7f00:1": Private,
		"2002:7f00:1::": Private, "198.18.0.1": Private,
		"169.254.169.254": Metadata, "fd00:ec2::254": Metadata, "::ffff:169.254.169.254": Metadata,
		"64:ff9b::a9fe:a9fe": Metadata, "100.100.100.200": Metadata,
		"0.0.0.0": Never, "::": Never, "0.1.2.3": Never, "224.0.0.1": Never, "ff02::1": Never,
		"255.255.255.255": Never, "240.0.0.1": Never, "::127.0.0.1": Never, "2001:db8::1": Private, "192.0.2.2": Private,
	} {
		if got, why := Classify(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Classify(%s) = %v (%s), want %v", addr, got, why, want)
		}
	}
}

func TestParseURL(t *testing.T) {
	good := map[string]string{ // URL -> host
		"https://Example.COM./a?b#frag":  "example.com",
		"http://127.0.0.1:8080/x":        "127.0.0.1",
		"http://[::1]:9/":                "::1",
		"http://[::ffff:127.0.0.1]/":     "127.0.0.1",
		"HTTPS://xn--bcher-kva.example/": "xn--bcher-kva.example",
		"https://example.com/ü":          "example.com",
	}
	for raw, host := range good {
		tg, err := ParseURL(raw)
		if err != nil || tg.Host != host || tg.URL.Fragment != "" {
			t.Errorf("ParseURL(%q) = %+v, %v; want host %s", raw, tg, err, host)
		}
	}
	bad := map[string]string{
		"file:///etc/passwd":          "only http and https",
		"gopher://x/":                 "only http and https",
		"http://2130706433/":          "decimal, octal",
		"http://0177.0.0.1/":          "decimal, octal",
		"http://0x7f.0.0.1/":          "decimal, octal",
		"http://127.1/":               "decimal, octal",
		"http://user:pw@example.com/": "user name",
		"http://exa\u200bmple.com/":   "invisible",
		"http://example.com/\u202e":   "invisible",
		"http://bücher.example/":      "punycode",
		"http://[fe80::1%25eth0]/":    "zone",
		"http://example.com:99999/":   "port",
		"http://example.com:/":        "port is empty",
		"http:///x":                   "no host",
		"http://example .com/":        "spaces",
		"mailto:a@b.c":                "only http",
	}
	for raw, want := range bad {
		_, err := ParseURL(raw)
		if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseURL(%q) = %v, want an error with %q", raw, err, want)
		}
	}
}

type fakeResolver struct {
	addrs   map[string][]string
	lookups atomic.Int32
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.lookups.Add(1)
	var out []netip.Addr
	for _, a := range f.addrs[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if out == nil {
		return nil, errors.New("no such host")
	}
	return out, nil
}

// TestDialChecksEveryAddress: a name that resolves to loopback (or partly to it) is refused unless a rule names
// the host; the negative control shows the same server reached when one does.
func TestDialChecksEveryAddress(t *testing.T) {
	ln := testenv.ClosingListener(t)
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	r := &fakeResolver{addrs: map[string][]string{
		"local.test":    {"127.0.0.1"},
		"mixed.test":    {"93.184.216.34", "127.0.0.1"},
		"metadata.test": {"169.254.169.254"},
		"mapped.test":   {"::ffff:127.0.0.1"},
	}}
	d := &Dialer{Resolver: r}
	ctx := context.Background()
	for _, c := range []struct {
		host  string
		reach Reach
		want  string // "" connects
	}{
		{"local.test", Reach{}, "loopback"},
		{"local.test", Reach{Private: true}, ""}, // the negative control: the rule opens it
		{"mapped.test", Reach{}, "loopback"},
		{"mixed.test", Reach{}, "loopback"},
		{"127.0.0.1", Reach{}, "only a rule naming"},
		{"127.0.0.1", Reach{Private: true}, ""},
		{"metadata.test", Reach{Private: true}, "only a rule naming that IP"},
		{"169.254.169.254", Reach{}, "cloud metadata"},
		{"0.0.0.0", Reach{Private: true}, "never dialled"},
		{"::", Reach{Private: true}, "never dialled"},
	} {
		conn, ap, err := d.Dial(ctx, c.host, port, c.reach)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Dial(%s, %+v): %v", c.host, c.reach, err)
		case c.want == "" && ap.Addr() != netip.MustParseAddr("127.0.0.1"):
			t.Errorf("Dial(%s) reached %s", c.host, ap)
		case c.want != "" && (err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Dial(%s, %+v) = %v, want a refusal with %q", c.host, c.reach, err, c.want)
		}
		if conn != nil {
			conn.Close()
		}
	}
	// One lookup per dial: the address dialled is the one checked, never the name looked up again.
	n := r.lookups.Load()
	if _, _, err := d.Dial(ctx, "local.test", port, Reach{Private: true}); err != nil {
		t.Fatal(err)
	}
	if got := r.lookups.Load() - n; got != 1 {
		t.Errorf("a dial looked the name up %d times", got)
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"https://example.com/", "http://[::ffff:127.0.0.1]:80/", "http://0177.1/", "http://a@b/",
		"http://xn--e1a.example:8080/p?q#f", "http://1.2.3.4.5/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		tg, err := ParseURL(raw)
		if err != nil {
			return
		}
		// What passes has a canonical host that parses again to itself, and never a numeric spelling of IPv4.
		if h, err := Host(tg.Host); err != nil || h != tg.Host {
			t.Fatalf("%q: host %q is not canonical: %q %v", raw, tg.Host, h, err)
		}
		again, err := ParseURL(tg.URL.String())
		if err != nil || again.Host != tg.Host || again.Port != tg.Port {
			t.Fatalf("%q: %q parses again as %+v %v", raw, tg.URL, again, err)
		}
	})
}
