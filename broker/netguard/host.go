package netguard

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/garuda-dev/garuda/broker/fsops"
	"github.com/garuda-dev/garuda/policy"
)

// ErrRefused is what every refusal of the guard wraps: a URL, host or address it does not let through.
var ErrRefused = errors.New("refused by the network guard")

// Target is a checked http or https URL: its host in the policy's canonical spelling and its port.
type Target struct {
	URL  *url.URL
	Host string // policy.NormHost's spelling: lower case, no trailing dot, an IP literal canonical and unmapped
	Port uint16
}

// Addr is host:port for a dial or a Host header.
func (t Target) Addr() string { return JoinHostPort(t.Host, t.Port) }

// MaxURL bounds the length of a URL.
const MaxURL = 8 << 10

// ParseURL checks a URL to fetch, without any I/O: http or https, a host name or IP literal (no decimal, octal or
// hex IPv4 spellings, no zone, ASCII only: an international name is written in punycode), no user name or password,
// a port in range, and no characters a reader of the question would not see.
func ParseURL(raw string) (Target, error) {
	if len(raw) > MaxURL {
		return Target{}, fmt.Errorf("the URL is longer than %d bytes: %w", MaxURL, ErrRefused)
	}
	if fsops.HasHidden([]byte(raw)) || strings.ContainsAny(raw, " \t\r\n") {
		// defends against a URL that reads as one thing in the question and fetches another
		return Target{}, fmt.Errorf("the URL %q holds spaces, control or invisible characters: %w", raw, ErrRefused)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Target{}, fmt.Errorf("the URL does not parse: %w: %w", err, ErrRefused)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return Target{}, fmt.Errorf("only http and https URLs can be fetched, not %q: %w", u.Scheme+":", ErrRefused)
	}
	if u.Opaque != "" || u.Host == "" {
		return Target{}, fmt.Errorf("the URL %q has no host: %w", raw, ErrRefused)
	}
	if u.User != nil {
		return Target{}, fmt.Errorf("a URL with a user name or password is refused: %w", ErrRefused)
	}
	host, err := Host(u.Hostname())
	if err != nil {
		return Target{}, err
	}
	port := uint16(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 || strings.HasPrefix(p, "0") {
			return Target{}, fmt.Errorf("the URL's port %q is not a port number: %w", p, ErrRefused)
		}
		port = uint16(n)
	} else if strings.HasSuffix(u.Host, ":") {
		return Target{}, fmt.Errorf("the URL's port is empty: %w", ErrRefused)
	}
	u.Fragment, u.RawFragment = "", ""
	u.Host = JoinHostPort(host, port)
	if port == 80 && u.Scheme == "http" || port == 443 && u.Scheme == "https" {
		u.Host = bracket(host)
	}
	return Target{URL: u, Host: host, Port: port}, nil
}

// Host checks a host name or IP literal and returns it in the policy's spelling.
func Host(h string) (string, error) {
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			return "", fmt.Errorf("the host %q is not ASCII (write an international name in punycode, xn--…): %w", h, ErrRefused)
		}
	}
	if strings.Contains(h, "%") {
		return "", fmt.Errorf("the host %q has a zone: %w", h, ErrRefused)
	}
	n, ok := policy.NormHost(h)
	if !ok {
		return "", fmt.Errorf("the host %q is not a host name or IP address (decimal, octal and hex spellings of IPv4 "+
			"addresses are refused): %w", h, ErrRefused)
	}
	return n, nil
}

// JoinHostPort is host:port, with an IPv6 host in brackets.
func JoinHostPort(host string, port uint16) string {
	return bracket(host) + ":" + strconv.Itoa(int(port))
}

func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}
