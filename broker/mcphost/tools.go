package mcphost

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxName is the providers' limit on a tool name (^[a-zA-Z0-9_-]{1,64}$).
const maxName = 64

// modelName is mcp__<server>__<tool> with every character the providers refuse made '_', cut to maxName with a
// hash of the whole name kept at its end (so that two long names that share their start stay apart).
func modelName(server, tool string) string {
	full := "mcp__" + server + "__" + tool
	var b strings.Builder
	for _, r := range full {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= maxName && name == full {
		return name
	}
	if len(name) <= maxName {
		return name
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "_" + hex.EncodeToString(sum[:])[:8]
	return name[:maxName-len(suffix)] + suffix
}

// uniqueName makes name unique among taken (a numbered suffix), and takes it.
func uniqueName(name string, taken map[string]bool) string {
	out := name
	for i := 2; taken[out]; i++ {
		suffix := fmt.Sprintf("_%d", i)
		out = name[:min(len(name), maxName-len(suffix))] + suffix
	}
	taken[out] = true
	return out
}

// checkTool checks what a server says of a tool before the model sees it: a name, an input schema that is a JSON
// object schema of bounded size, a description of bounded size with no hidden characters (they are dropped:
// defends against instructions to the model that the user cannot see).
func checkTool(server string, t *mcp.Tool) (Tool, error) {
	if t == nil || t.Name == "" {
		return Tool{}, errors.New("it has no name")
	}
	if len(t.Name) > 256 || !utf8.ValidString(t.Name) {
		return Tool{}, errors.New("its name is too long or not UTF-8")
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return Tool{}, fmt.Errorf("its input schema is not JSON: %w", err)
	}
	if len(schema) > maxSchema {
		return Tool{}, fmt.Errorf("its input schema is over %d KiB", maxSchema>>10)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil || obj == nil {
		return Tool{}, errors.New("its input schema is not a JSON object")
	}
	var typ string
	if err := json.Unmarshal(obj["type"], &typ); err != nil || typ != "object" {
		return Tool{}, errors.New(`its input schema's type is not "object"`)
	}
	if p, ok := obj["properties"]; ok {
		var props map[string]json.RawMessage
		if json.Unmarshal(p, &props) != nil {
			return Tool{}, errors.New("its input schema's properties are not an object")
		}
	}
	tool := Tool{Server: server, Tool: t.Name, Schema: schema, Description: printable(t.Description, maxDescription)}
	if t.Annotations != nil {
		tool.ReadOnlyHint = t.Annotations.ReadOnlyHint
	}
	return tool, nil
}

// printable is s without control, format (zero-width, bidirectional) and private-use characters, at most max
// bytes; line breaks and tabs stay.
func printable(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		if r == '\n' || r == '\t' || !(unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r)) {
			if b.Len()+utf8.RuneLen(r) > max {
				break
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}
