package commands

import (
	"strings"
)

// expand turns a command's body and the user's arguments into the prompt: $ARGUMENTS is all of args, $1 … $9
// the shell-like words of args ("" when missing). The body is scanned once, so text that comes from the
// arguments is never expanded again. A body with no placeholder gets the arguments appended, so they are not
// lost. A skill's prompt is its instructions followed by the arguments as the user's request.
func expand(c *Command, args string) string {
	words := splitArgs(args)
	var b strings.Builder
	used := false
	body := c.Body
	for i := 0; i < len(body); i++ {
		if body[i] == '$' {
			if strings.HasPrefix(body[i+1:], "ARGUMENTS") {
				b.WriteString(args)
				i += len("ARGUMENTS")
				used = true
				continue
			}
			if i+1 < len(body) && body[i+1] >= '1' && body[i+1] <= '9' {
				if n := int(body[i+1] - '1'); n < len(words) {
					b.WriteString(words[n])
				}
				i++
				used = true
				continue
			}
		}
		b.WriteByte(body[i])
	}
	out := b.String()
	if c.Skill {
		out = "Use the skill \"" + c.Name + "\" (" + c.Path + "). Its instructions:\n\n" + out
		if args != "" && !used {
			out += "\n\nThe user's request: " + args
		}
		return out
	}
	if args != "" && !used {
		out += "\n\nARGUMENTS: " + args
	}
	return out
}

// splitArgs splits like a shell without any expansion: blanks separate words, '…' keeps everything literal,
// "…" keeps everything but \" and \\, and a backslash outside quotes keeps the next character. An unclosed
// quote runs to the end. (mvdan.cc/sh would expand $VAR from the broker's environment into the prompt, so
// it is not used here.)
func splitArgs(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
				i++
				cur.WriteByte(s[i])
			default:
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
