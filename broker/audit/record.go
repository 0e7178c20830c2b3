package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Event kinds written by the broker. Other kinds are allowed; these are the ones the broker uses.
const (
	EventDecision          = "decision"
	EventExecution         = "execution"
	EventConsent           = "consent"
	EventAnswer            = "answer"
	EventRefusedConnection = "refused_connection"
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
