package policy

import (
	"fmt"
	"path/filepath"
	"strings"
)

// MCPMatch is one entry of team policy's mcp_servers lists: it names a server by its key, its program or its
// address.
type MCPMatch struct {
	Name, Command, URL string
}

func (m MCPMatch) String() string {
	switch {
	case m.Name != "":
		return "name:" + m.Name
	case m.Command != "":
		return "command:" + m.Command
	}
	return "url:" + m.URL
}

// matches reports whether the entry names the server: its key, its program (as written or by its base name), or
// its address ('*' matching any run of characters).
func (m MCPMatch) matches(name, command, url string) bool {
	switch {
	case m.Name != "":
		return m.Name == name
	case m.Command != "":
		return command != "" && (m.Command == command || m.Command == filepath.Base(command))
	}
	return url != "" && wildMatch(m.URL, url)
}

// MCPServerForbidden reports whether team policy forbids an MCP server (named by its key, and its program or its
// address), with the reason: a deny entry that matches it, or an allow list that does not. Nothing loosens it: not
// the user's consent, nor the user's own mcp.json.
func MCPServerForbidden(team *Settings, name, command, url string) (string, bool) {
	if team == nil {
		return "", false
	}
	for _, m := range team.MCPDeny {
		if m.matches(name, command, url) {
			return fmt.Sprintf("team policy forbids the MCP server %q (%s)", name, m), true
		}
	}
	for _, list := range team.MCPAllow {
		ok := false
		for _, m := range list {
			ok = ok || m.matches(name, command, url)
		}
		if !ok {
			return fmt.Sprintf("team policy allows only the MCP servers it lists, and %q is not one of them", name), true
		}
	}
	return "", false
}

// mcpServers parses team policy's "mcp_servers" object.
func (p *settingsParser) mcpServers(s *Settings) error {
	return p.keys(`"mcp_servers"`, func(k string, off int64) error {
		if k != "allow" && k != "deny" {
			return p.Errorf(off, "unknown key %q in \"mcp_servers\" (want allow or deny)", k)
		}
		list := []MCPMatch{}
		err := p.strings(`"mcp_servers.`+k+`"`, func(v string, off int64) error {
			kind, val, _ := strings.Cut(v, ":")
			var m MCPMatch
			switch kind {
			case "name":
				m.Name = val
			case "command":
				m.Command = val
			case "url":
				m.URL = val
			}
			if val == "" || m == (MCPMatch{}) {
				return p.Errorf(off, "mcp_servers.%s: %q must be name:<key>, command:<program> or url:<address>", k, v)
			}
			list = append(list, m)
			return nil
		})
		if k == "allow" {
			s.MCPAllow = append(s.MCPAllow, list)
		} else {
			s.MCPDeny = append(s.MCPDeny, list...)
		}
		return err
	})
}
