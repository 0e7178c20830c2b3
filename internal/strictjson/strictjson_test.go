package strictjson

import (
	"strings"
	"testing"
)

func TestUnmarshal(t *testing.T) {
	type doc struct {
		A int            `json:"a"`
		M map[string]int `json:"m"`
	}
	var d doc
	if err := Unmarshal("f.json", []byte(`{"a": 1, "m": {"x": 2}}`), &d); err != nil || d.A != 1 || d.M["x"] != 2 {
		t.Fatalf("Unmarshal = %+v, %v", d, err)
	}
	for in, want := range map[string]string{
		"{\"a\": 1,\n\"a\": 2}":            `f.json: line 2: duplicate key "a"`,
		"{\"m\": {\"x\": 1,\n\n\"x\": 2}}": `f.json: line 3: duplicate key "x" in an object`,
		"{\"b\": 1}":                       `f.json: line 1: json: unknown field "b"`,
		"{\"a\": 1}\n{}":                   `f.json: line 2: invalid JSON: more text after the end`,
		"{\"a\":\n":                        `f.json: line 2: invalid JSON: the file ends too early`,
		"{\"a\": \"x\"}":                   `f.json: line 1: json: cannot unmarshal string`,
		"[{\"a\": 1, \"a\": 1}]":           `duplicate key "a"`,
	} {
		if err := Unmarshal("f.json", []byte(in), &doc{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Unmarshal(%q) = %v, want %q", in, err, want)
		}
	}
}
