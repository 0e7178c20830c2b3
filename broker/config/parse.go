package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// parser walks one JSON file token by token, so that every error can name the line, and an
// unknown key is an error rather than silently ignored (a typo in a setting must not be lost).
type parser struct {
	path string
	data []byte
	dec  *json.Decoder
}

func newParser(path string, data []byte) *parser {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &parser{path: path, data: data, dec: dec}
}

// line is the 1-based line of a byte offset.
func (p *parser) line(off int64) int {
	if off > int64(len(p.data)) {
		off = int64(len(p.data))
	}
	return 1 + bytes.Count(p.data[:off], []byte("\n"))
}

// errAt is an error naming the file and the line of the offset.
func (p *parser) errAt(off int64, format string, args ...any) error {
	return fmt.Errorf("%s: line %d: %s", p.path, p.line(off), fmt.Sprintf(format, args...))
}

// token reads one token, turning syntax errors into errors naming the line.
func (p *parser) token() (json.Token, error) {
	tok, err := p.dec.Token()
	if err == nil {
		return tok, nil
	}
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return nil, p.errAt(syn.Offset, "invalid JSON: %s", syn.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, p.errAt(int64(len(p.data)), "invalid JSON: the file ends too early")
	default:
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
}

// object reads an object, calling field for each key; field must read the value.
// what names the object in messages ("the file", `provider "x"`).
func (p *parser) object(what string, field func(key string, off int64) error) error {
	tok, err := p.token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return p.errAt(p.dec.InputOffset(), "%s: want an object, got %s", what, describe(tok))
	}
	seen := map[string]bool{}
	for p.dec.More() {
		tok, err := p.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // json.Decoder only returns strings as keys
		off := p.dec.InputOffset()
		if seen[key] {
			return p.errAt(off, "%s: key %q appears twice", what, key)
		}
		seen[key] = true
		if err := field(key, off); err != nil {
			return err
		}
	}
	_, err = p.token() // the closing '}'
	return err
}

// end checks that nothing but white space follows the top-level value.
func (p *parser) end() error {
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		return p.errAt(p.dec.InputOffset(), "invalid JSON: more text after the end of the object")
	}
	return nil
}

// str reads a string value; null reads as "".
func (p *parser) str(what string) (string, int64, error) {
	tok, err := p.token()
	if err != nil {
		return "", 0, err
	}
	off := p.dec.InputOffset()
	switch v := tok.(type) {
	case string:
		return v, off, nil
	case nil:
		return "", off, nil
	}
	if err := p.skipRest(tok); err != nil {
		return "", 0, err
	}
	return "", 0, p.errAt(off, "%s: want a string, got %s", what, describe(tok))
}

// positiveInt reads a whole number above zero; null reads as 0.
func (p *parser) positiveInt(what string) (int, error) {
	tok, err := p.token()
	if err != nil {
		return 0, err
	}
	off := p.dec.InputOffset()
	switch v := tok.(type) {
	case nil:
		return 0, nil
	case json.Number:
		n, err := strconv.ParseInt(v.String(), 10, 32)
		if err != nil || n <= 0 {
			return 0, p.errAt(off, "%s: want a whole number above 0, got %s", what, v)
		}
		return int(n), nil
	}
	if err := p.skipRest(tok); err != nil {
		return 0, err
	}
	return 0, p.errAt(off, "%s: want a number, got %s", what, describe(tok))
}

// skipRest consumes the rest of a value whose first token was tok.
func (p *parser) skipRest(tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := p.token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// describe names the JSON type of a token, never its content (a value may be a secret).
func describe(tok json.Token) string {
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
