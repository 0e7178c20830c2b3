package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Event kinds written by the broker. Other kinds are allowed; these are the ones the broker uses.
const (
	EventDecision          = "decision"
	EventExecution         = "execution"
	EventProcessEnd        = "process_end" // a background process ended: by itself, stopped, or with its session
	EventConsent           = "consent"
	EventAnswer            = "answer"
	EventRefusedConnection = "refused_connection"
	EventFetch             = "fetch"        // one request of a web_fetch: URL, the address dialled, status, bytes
	EventConnection        = "connection"   // one connection through the commands' proxy: host:port, address, bytes, verdict
	EventGuardUndone       = "guard_undone" // what the command guard undid after a command: the paths, each a line
	EventHook              = "hook"         // one hook run: its command, event, exit code, duration, verdict
	EventSetup             = "setup"        // garuda setup stored a provider's model (and key)
)

// Record is one line of the audit log. Input is a summary of the request (a path, a pattern, a command's text),
// never file contents or keys. A zero Time is set to now; a record goes to the file of its UTC date. Prev and Hash
// are filled in by the Log: Hash is the hex sha256 of the record's JSON (this field order, Hash empty), Prev the
// Hash of the line before it in the same file ("" for the first).
type Record struct {
	Time       time.Time         `json:"time"`
	Broker     string            `json:"broker,omitempty"`
	Session    string            `json:"session,omitempty"`
	Event      string            `json:"event"`
	Op         string            `json:"op,omitempty"`
	Input      string            `json:"input,omitempty"`
	Verdict    string            `json:"verdict,omitempty"`
	Rule       string            `json:"rule,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	AnsweredBy string            `json:"answered_by,omitempty"`
	Status     string            `json:"status,omitempty"`
	ExitCode   *int              `json:"exit_code,omitempty"`
	DurationMS int64             `json:"duration_ms,omitempty"`
	Detail     map[string]string `json:"detail,omitempty"`
	Prev       string            `json:"prev"`
	Hash       string            `json:"hash,omitempty"`
}

// seal sets r.Hash from r's canonical JSON (Hash empty, Prev included) and returns the line to write, newline
// included.
func seal(r *Record) ([]byte, error) {
	r.Hash = ""
	validUTF8(r)
	sum, err := digest(r)
	if err != nil {
		return nil, err
	}
	r.Hash = sum
	line, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode audit record %q: %w", r.Event, err)
	}
	return append(line, '\n'), nil
}

// validUTF8 replaces invalid UTF-8 in r's strings: JSON writes such bytes as "\ufffd", which reads back as a
// character that JSON writes as itself, so the line would not be canonical and the broker's own log would fail
// Verify (defends against a command or path with a stray byte breaking the audit chain).
func validUTF8(r *Record) {
	for _, s := range []*string{&r.Broker, &r.Session, &r.Event, &r.Op, &r.Input, &r.Verdict, &r.Rule, &r.Reason,
		&r.AnsweredBy, &r.Status, &r.Prev} {
		*s = strings.ToValidUTF8(*s, "\uFFFD")
	}
	for k, v := range r.Detail {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			d := make(map[string]string, len(r.Detail)) // a copy: the caller's map is left alone
			for k, v := range r.Detail {
				d[strings.ToValidUTF8(k, "\uFFFD")] = strings.ToValidUTF8(v, "\uFFFD")
			}
			r.Detail = d
			break
		}
	}
}

// digest returns the hex sha256 of r's canonical JSON with Hash left empty.
func digest(r *Record) (string, error) {
	c := *r
	c.Hash = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", fmt.Errorf("encode audit record %q: %w", r.Event, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
