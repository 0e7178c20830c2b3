// Package strictjson is the one strict reader of the JSON files Garuda reads (settings, policy.json, models.json,
// credentials, mcp.json, hooks, trust.json, consents, the undo index): every error names the file and the line, and a key that
// appears twice in an object is an error. It is pure (no I/O), so the broker, the policy and the front end may
// all import it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Decoder walks one JSON document token by token, so that every error can name the line.
type Decoder struct {
	name string // how errors name the file ("/home/u/.garuda/models.json", "settings /x/settings.json")
	data []byte
	dec  *json.Decoder
}

// New returns a decoder of data; name starts every error message. Numbers decode as json.Number.
func New(name string, data []byte) *Decoder {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &Decoder{name: name, data: data, dec: dec}
}

// Name is the name errors start with.
func (d *Decoder) Name() string { return d.name }

// Line is the 1-based line of a byte offset.
func (d *Decoder) Line(off int64) int {
	if off > int64(len(d.data)) {
		off = int64(len(d.data))
	}
	return 1 + bytes.Count(d.data[:off], []byte("\n"))
}

// Offset is the decoder's position: the byte just after the last token read.
func (d *Decoder) Offset() int64 { return d.dec.InputOffset() }

// More reports whether the current object or list has another element.
func (d *Decoder) More() bool { return d.dec.More() }

// Errorf is an error naming the file and the line of the offset: "name: line N: message".
func (d *Decoder) Errorf(off int64, format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s", d.name, d.Line(off), fmt.Sprintf(format, args...))
}

// wrap turns an error of encoding/json into one naming the file and the line.
func (d *Decoder) wrap(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return d.Errorf(syn.Offset, "invalid JSON: %s", syn.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return d.Errorf(int64(len(d.data)), "invalid JSON: the file ends too early")
	case errors.As(err, &typ):
		return fmt.Errorf("%s: line %d: %w", d.name, d.Line(typ.Offset), err)
	}
	return fmt.Errorf("%s: line %d: %w", d.name, d.Line(d.Offset()), err)
}

// Token reads one token; a syntax error names the line.
func (d *Decoder) Token() (json.Token, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.wrap(err)
	}
	return tok, nil
}

// Decode reads the next value into v (for a scalar: objects and lists go through Object and Skip, which see
// duplicate keys; encoding/json keeps the last of two). Errors name the line.
func (d *Decoder) Decode(v any) error {
	if err := d.dec.Decode(v); err != nil {
		return d.wrap(err)
	}
	return nil
}

// Object reads an object, calling field for each key; field must read the value. what names the object in
// messages ("the file", `provider "x"`).
func (d *Decoder) Object(what string, field func(key string, off int64) error) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if dl, ok := tok.(json.Delim); !ok || dl != '{' {
		return d.Errorf(d.Offset(), "%s: want an object, got %s", what, Describe(tok))
	}
	return d.Fields(what, field)
}

// Fields reads the keys of an object whose '{' was just read, and its closing '}'. A key seen twice is an error:
// two readers (or a reviewer and the program) could otherwise take different values from the same file.
func (d *Decoder) Fields(what string, field func(key string, off int64) error) error {
	seen := map[string]bool{}
	for d.dec.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // json.Decoder only returns strings as keys
		off := d.Offset()
		if seen[key] {
			if what == "" || what == "the file" {
				return d.Errorf(off, "duplicate key %q", key)
			}
			return d.Errorf(off, "duplicate key %q in %s", key, what)
		}
		seen[key] = true
		if err := field(key, off); err != nil {
			return err
		}
	}
	_, err := d.Token() // the closing '}'
	return err
}

// End checks that nothing but white space follows the top-level value.
func (d *Decoder) End() error {
	if _, err := d.dec.Token(); !errors.Is(err, io.EOF) {
		return d.Errorf(d.Offset(), "invalid JSON: more text after the end of the object")
	}
	return nil
}

// String reads a string value; null reads as "". It returns the value's offset.
func (d *Decoder) String(what string) (string, int64, error) {
	tok, err := d.Token()
	if err != nil {
		return "", 0, err
	}
	off := d.Offset()
	switch v := tok.(type) {
	case string:
		return v, off, nil
	case nil:
		return "", off, nil
	}
	if err := d.SkipRest(tok); err != nil {
		return "", 0, err
	}
	return "", 0, d.Errorf(off, "%s: want a string, got %s", what, Describe(tok))
}

// PositiveInt reads a whole number above zero; null reads as 0.
func (d *Decoder) PositiveInt(what string) (int, error) {
	tok, err := d.Token()
	if err != nil {
		return 0, err
	}
	off := d.Offset()
	switch v := tok.(type) {
	case nil:
		return 0, nil
	case json.Number:
		n, err := strconv.ParseInt(v.String(), 10, 32)
		if err != nil || n <= 0 {
			return 0, d.Errorf(off, "%s: want a whole number above 0, got %s", what, v)
		}
		return int(n), nil
	}
	if err := d.SkipRest(tok); err != nil {
		return 0, err
	}
	return 0, d.Errorf(off, "%s: want a number, got %s", what, Describe(tok))
}

// Skip reads a value that is not used; duplicate keys in it are still errors.
func (d *Decoder) Skip() error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	return d.SkipRest(tok)
}

// SkipRest consumes the rest of a value whose first token was tok; duplicate keys in it are errors.
func (d *Decoder) SkipRest(tok json.Token) error {
	dl, ok := tok.(json.Delim)
	switch {
	case !ok:
		return nil
	case dl == '{':
		return d.Fields("an object", func(string, int64) error { return d.Skip() })
	case dl == '[':
		for d.dec.More() {
			if err := d.Skip(); err != nil {
				return err
			}
		}
		_, err := d.Token() // the closing ']'
		return err
	}
	return nil
}

// Describe names the JSON type of a token, never its content (a value may be a secret).
func Describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		if v == '[' {
			return "a list"
		}
		return "the end of " + map[json.Delim]string{'}': "an object", ']': "a list"}[v]
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "true or false"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// Unmarshal decodes one JSON document into v as strictly as the hand-written readers: a key twice in any object,
// a key v has no field for, or text after the value is an error naming the file and the line.
func Unmarshal(name string, data []byte, v any) error {
	d := New(name, data)
	if err := d.Skip(); err != nil { // the duplicate keys, which encoding/json would silently resolve
		return err
	}
	if err := d.End(); err != nil {
		return err
	}
	d = New(name, data)
	d.dec.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	return nil
}
