package commands

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// ConsentAgent is the kind of consent of a project's own agent.
const ConsentAgent = "agent"

// MaxAgents bounds the agents of a Set.
const MaxAgents = 100

// agentPlaces are where agents are read, in precedence order (first wins): the user's, then the project's.
func agentPlaces(project, user fs.FS) []place {
	var ps []place
	if user != nil {
		ps = append(ps, place{user, "agents", "$GARUDA_HOME/agents", SourceUser, false})
	}
	if project != nil {
		ps = append(ps, place{project, ".garuda/agents", ".garuda/agents", SourceProject, false},
			place{project, ".claude/agents", ".claude/agents", SourceProject, false})
	}
	return ps
}

// loadAgents reads the *.md files of each agent folder, in Claude Code's format: frontmatter name, description,
// tools (a comma list or a YAML list), model; the body is the agent's instructions. A name taken by an earlier
// agent is a warning; an agent's name follows the skill names' rules (a-z, 0-9, -).
func (l *loader) loadAgents(places []place) {
	for _, p := range places {
		if !l.checkDir(p) {
			continue
		}
		for _, e := range l.readDir(p.fsys, p.dir, p.display) {
			name := e.Name()
			display := p.display + "/" + name
			if !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") || e.IsDir() {
				continue
			}
			if l.skipEntry(e, display) {
				continue
			}
			if len(l.set.agents) >= MaxAgents {
				l.capWarn(p.display, fmt.Sprintf("more than %d agents; the rest are ignored", MaxAgents))
				break
			}
			data, ok := l.readRegular(p.fsys, p.dir+"/"+name, display)
			if !ok {
				continue
			}
			c := parseCommand(data, strings.TrimSuffix(name, ".md"), p.source, display, false)
			c.Agent = true
			if fm, _ := splitFrontmatter(strings.ReplaceAll(string(data), "\r\n", "\n")); fm.fields != nil {
				if n, ok := fm.fields["name"]; ok && !n.isList && strings.TrimSpace(n.str) != "" {
					c.Name = strings.TrimSpace(n.str)
				}
				if v, ok := fm.fields["tools"]; ok {
					list := v.list
					if !v.isList {
						list = strings.Split(v.str, ",")
					}
					var names []string
					for _, t := range list {
						if t, _ = oneLine(strings.TrimSpace(t)); t != "" {
							names = append(names, t)
						}
					}
					c.Tools = strings.Join(names, ", ")
				}
			}
			if !validSkillName(c.Name) {
				l.warn(display, fmt.Sprintf("agent name %q is not valid (1-64 of a-z, 0-9, -); skipped", c.Name))
				continue
			}
			if c.Warning != "" {
				l.set.warnings = append(l.set.warnings, "Garuda: "+c.Path+": "+c.Warning)
			}
			if i := slices.IndexFunc(l.set.agents, func(a *Command) bool { return a.Name == c.Name }); i >= 0 {
				l.warn(display, fmt.Sprintf("agent %s is already defined by %s; this one is ignored", c.Name, l.set.agents[i].Path))
				continue
			}
			if c.Name == "explore" {
				l.warn(display, "explore is the built-in agent; this one is ignored")
				continue
			}
			l.set.agents = append(l.set.agents, c)
		}
	}
	slices.SortFunc(l.set.agents, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
}

// Agents returns the agents sorted by name.
func (s *Set) Agents() []Command {
	out := make([]Command, 0, len(s.agents))
	for _, a := range s.agents {
		out = append(out, *a)
	}
	return out
}

// Agent returns a copy of the named agent.
func (s *Set) Agent(name string) (*Command, bool) {
	for _, a := range s.agents {
		if a.Name == name {
			c := *a
			return &c, true
		}
	}
	return nil, false
}
