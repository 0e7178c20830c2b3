// Package neterr says in words why a connection or an HTTP exchange failed (web_fetch, an MCP server over HTTP, the
// model provider), instead of the transport's own text ("dial tcp …: connect: connection refused").
package neterr

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// Error is a network error in words: Error() is the words, Unwrap() the transport's error (errors.Is still sees a
// timeout or a refused connection).
type Error struct {
	Words string
	Err   error
}

func (e *Error) Error() string { return e.Words }
func (e *Error) Unwrap() error { return e.Err }

// Wrap returns err in words when Words knows it, else err itself; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	if w, ok := Words(err); ok {
		return &Error{Words: w, Err: err}
	}
	return err
}

// Words says what went wrong with a connection or an HTTP exchange, naming the host or address, and whether it
// knew err. What it does not know is left to the caller (its text may be the transport's).
func Words(err error) (string, bool) {
	var (
		already *Error
		dns     *net.DNSError
		record  tls.RecordHeaderError
		unknown x509.UnknownAuthorityError
		name    x509.HostnameError
		invalid x509.CertificateInvalidError
		ne      net.Error
	)
	at := address(err)
	msg := err.Error()
	switch {
	case errors.As(err, &already):
		return already.Words, true
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return fmt.Sprintf("the host %s does not exist (DNS has no address for it)", dns.Name), true
		}
		return fmt.Sprintf("the host %s could not be looked up (DNS: %s)", dns.Name, dns.Err), true
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("nothing accepts connections%s (connection refused): is the server running?", at), true
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Sprintf("the server%s broke the connection off (reset)", at), true
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("the server%s cannot be reached from this machine (no route to it)", at), true
	case errors.As(err, &record), strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("the server%s does not speak TLS (an http:// address given as https://?)", at), true
	case errors.As(err, &unknown):
		return "the server's TLS certificate is not signed by an authority this machine trusts", true
	case errors.As(err, &name):
		return fmt.Sprintf("the server's TLS certificate is not for %s", name.Host), true
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return "the server's TLS certificate has expired (or is not valid yet: is this machine's clock right?)", true
		}
		return "the server's TLS certificate is not valid", true
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("the server%s did not answer in time", at), true
	case strings.Contains(msg, "malformed HTTP"):
		return fmt.Sprintf("the server%s did not answer in HTTP", at), true
	case strings.Contains(msg, "server response headers exceeded"):
		return "the server's response headers are over 1 MiB", true
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Sprintf("the server%s closed the connection before its answer was complete", at), true
	}
	return "", false
}

// Permanent reports whether err fails the same way however often it is tried: the server does not speak TLS, or its
// certificate is not trusted. Trying again only makes the user wait.
func Permanent(err error) bool {
	var (
		record  tls.RecordHeaderError
		unknown x509.UnknownAuthorityError
		name    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	return errors.As(err, &record) || errors.As(err, &unknown) || errors.As(err, &name) || errors.As(err, &invalid) ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// address is " at ADDR", the remote address of err's connection, or "" when err names none.
func address(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		return " at " + op.Addr.String()
	}
	return ""
}
