package commands

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/garuda-dev/garuda/broker/conffile"
)

// Sources of a command or skill.
const (
	SourceProject = "project"
	SourceUser    = "user"
)

// Limits on what Load reads. They defend against a project (or a model writing in it) that makes Load read
// huge files, walk a huge or deep tree, or fill the menu and the system prompt.
const (
	MaxFileSize     = 256 << 10 // bytes of one command or SKILL.md file
	MaxEntriesInDir = 1000      // entries read from one folder
	MaxDepth        = 4         // parts of a command's name (a:b:c:d): folders nest at most 3 deep
	MaxCommands     = 500       // commands in a Set
	MaxSkills       = 100       // skills in a Set
	MaxFieldLen     = 1024      // characters of a description or other frontmatter value (Agent Skills' limit)
	MaxTotalBytes   = 16 << 20  // bytes read by one Load
	maxNameLen      = 128
)

// Command is one custom command or skill.
type Command struct {
	Name         string // "hello", "a:b" (from a/b.md); a skill's name
	Description  string
	ArgumentHint string
	Model        string
	// AllowedTools is carried as written; it is information for the user and never loosens the policy.
	AllowedTools string
	Body         string // the text after the frontmatter
	Skill        bool
	Agent        bool   // an agent of .garuda/agents, .claude/agents or $GARUDA_HOME/agents (see loadAgents)
	Tools        string // an agent's tools as its frontmatter lists them, joined by ", "
	Source       string // SourceProject or SourceUser
	Path         string // display path: ".claude/commands/a/b.md", "$GARUDA_HOME/skills/x/SKILL.md"
	Hash         string // sha256 hex of the file's bytes, the very bytes Body was read from
	Warning      string // set when the file had a problem but the command is listed anyway
}

// Set is the commands and skills found by Load. It is read-only after Load and safe for concurrent use.
type Set struct {
	byName   map[string]*Command
	commands []*Command // sorted by name
	skills   []*Command // sorted by name
	agents   []*Command // sorted by name; a namespace of their own
	warnings []string
}

// place is one folder Load reads.
type place struct {
	fsys    fs.FS
	dir     string // in fsys
	display string // how the folder is shown: ".claude/commands", "$GARUDA_HOME/skills"
	source  string
	skill   bool
}

// Load finds the commands and skills of a project and of the user. project is the project root (commands in
// .garuda/commands and .claude/commands, skills in .garuda/skills, .claude/skills and .agents/skills); user is
// $GARUDA_HOME (commands/ and skills/). Either may be nil.
//
// Precedence on a name clash, first wins: user commands, user skills, then the project's .garuda/commands,
// .claude/commands, .garuda/skills, .claude/skills, .agents/skills; each ignored duplicate is a warning. So a
// project cannot shadow the user's own command. A project command cannot take a built-in's name either, except
// /review and /init (a user command can take any). Problems with single files become warnings and Load goes
// on. The error is non-nil only when a folder that exists could not be read; the Set is then still returned
// with everything else.
func Load(project fs.FS, user fs.FS) (*Set, error) {
	var places []place
	if user != nil {
		places = append(places,
			place{user, "commands", "$GARUDA_HOME/commands", SourceUser, false},
			place{user, "skills", "$GARUDA_HOME/skills", SourceUser, true})
	}
	if project != nil {
		places = append(places,
			place{project, ".garuda/commands", ".garuda/commands", SourceProject, false},
			place{project, ".claude/commands", ".claude/commands", SourceProject, false},
			place{project, ".garuda/skills", ".garuda/skills", SourceProject, true},
			place{project, ".claude/skills", ".claude/skills", SourceProject, true},
			place{project, ".agents/skills", ".agents/skills", SourceProject, true})
	}
	l := &loader{set: &Set{byName: map[string]*Command{}}}
	for _, p := range places {
		if !l.checkDir(p) {
			continue
		}
		if p.skill {
			l.loadSkills(p)
		} else {
			l.loadCommands(p, p.dir, nil)
		}
	}
	l.loadAgents(agentPlaces(project, user))
	s := l.set
	for _, c := range s.byName {
		if c.Skill {
			s.skills = append(s.skills, c)
		} else {
			s.commands = append(s.commands, c)
		}
	}
	byName := func(a, b *Command) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(s.commands, byName)
	slices.SortFunc(s.skills, byName)
	return s, errors.Join(l.errs...)
}

type loader struct {
	set       *Set
	errs      []error
	total     int64
	nCommands int
	nSkills   int
	capped    map[string]bool
}

func (l *loader) warn(display, msg string) {
	l.set.warnings = append(l.set.warnings, "Garuda: "+display+": "+msg)
}

// checkDir reports whether pl's folder is a real folder; a folder that exists but cannot be read is one of Load's
// errors. Every component is checked with Lstat: a symbolic link is skipped with a warning, which defends against a
// project pointing its commands folder at files elsewhere.
func (l *loader) checkDir(pl place) bool {
	fsys, dir, display := pl.fsys, pl.dir, pl.display
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := fs.Lstat(fsys, p)
		if errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("read %s: %w", display, err))
			return false
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l.warn(display, fmt.Sprintf("%s is a symbolic link; skipped", p))
			return false
		case !fi.IsDir():
			if i < len(parts)-1 {
				return false
			}
			l.warn(display, "not a folder; skipped")
			return false
		}
	}
	return true
}

// readDir lists at most MaxEntriesInDir entries of dir, sorted by name.
func (l *loader) readDir(fsys fs.FS, dir, display string) []fs.DirEntry {
	f, err := fsys.Open(dir)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("read %s: %w", display, err))
		return nil
	}
	defer f.Close()
	rd, ok := f.(fs.ReadDirFile)
	if !ok {
		l.errs = append(l.errs, fmt.Errorf("read %s: not a folder", display))
		return nil
	}
	var entries []fs.DirEntry
	for len(entries) <= MaxEntriesInDir {
		batch, err := rd.ReadDir(MaxEntriesInDir + 1 - len(entries))
		entries = append(entries, batch...)
		if err == io.EOF || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("read %s: %w", display, err))
			break
		}
	}
	if len(entries) > MaxEntriesInDir {
		entries = entries[:MaxEntriesInDir]
		l.warn(display, fmt.Sprintf("more than %d entries; the rest are ignored", MaxEntriesInDir))
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries
}

// readRegular reads a file that ReadDir listed as regular, through conffile: on the file systems the broker passes,
// confined with no symbolic link followed and without blocking on a FIFO, and checked again on the open file, which
// defends against a file swapped for a link, a device or a growing file between listing and reading.
func (l *loader) readRegular(fsys fs.FS, name, display string) ([]byte, bool) {
	data, err := conffile.ReadFS(fsys, name, MaxFileSize)
	switch {
	case errors.Is(err, conffile.ErrTooLarge):
		l.warn(display, fmt.Sprintf("larger than %d KiB; skipped", MaxFileSize>>10))
		return nil, false
	case errors.Is(err, conffile.ErrNotRegular):
		l.warn(display, "not a regular file; skipped")
		return nil, false
	case errors.Is(err, conffile.ErrLink):
		l.warn(display, "symbolic link; skipped")
		return nil, false
	case err != nil:
		l.warn(display, fmt.Sprintf("cannot be read (%v); skipped", err))
		return nil, false
	}
	if l.total+int64(len(data)) > MaxTotalBytes {
		l.warn(display, fmt.Sprintf("commands and skills exceed %d MiB in all; skipped", MaxTotalBytes>>20))
		return nil, false
	}
	l.total += int64(len(data))
	return data, true
}

// skipEntry reports whether a folder entry is not a candidate at all (hidden), or warns and skips it when it
// is a symbolic link or special file: only real folders and regular files are read, which defends against a
// link out of the project and against a FIFO or device that would block or never end.
func (l *loader) skipEntry(e fs.DirEntry, display string) bool {
	if strings.HasPrefix(e.Name(), ".") {
		return true
	}
	t := e.Type()
	switch {
	case t&fs.ModeSymlink != 0:
		l.warn(display, "symbolic link; skipped")
		return true
	case !t.IsDir() && !t.IsRegular():
		l.warn(display, "not a regular file; skipped")
		return true
	}
	return false
}

var segmentRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`) })

func (l *loader) loadCommands(p place, dir string, ns []string) {
	for _, e := range l.readDir(p.fsys, dir, joinDisplay(p.display, ns)) {
		name := e.Name()
		display := joinDisplay(p.display, append(slices.Clone(ns), name))
		if e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			if l.skipEntry(e, display) {
				continue
			}
			if len(ns)+1 >= MaxDepth {
				l.warn(display, fmt.Sprintf("folders nested deeper than %d levels are not read", MaxDepth-1))
				continue
			}
			if !segmentRE().MatchString(name) {
				l.warn(display, "folder name is not a valid command namespace (letters, digits, _ . -); skipped")
				continue
			}
			l.loadCommands(p, dir+"/"+name, append(slices.Clone(ns), name))
			continue
		}
		// A link to a folder (no extension) or to a .md file is skipped with a warning; other files are not ours.
		if e.Type()&fs.ModeSymlink != 0 && !strings.Contains(name, ".") {
			l.skipEntry(e, display)
			continue
		}
		if !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		if l.skipEntry(e, display) {
			continue
		}
		base := strings.TrimSuffix(name, ".md")
		// Names are plain ASCII so that no command can look like another one in the editor's menu.
		if !segmentRE().MatchString(base) {
			l.warn(display, "file name is not a valid command name (letters, digits, _ . -); skipped")
			continue
		}
		full := strings.Join(append(slices.Clone(ns), base), ":")
		if len(full) > maxNameLen {
			l.warn(display, "command name too long; skipped")
			continue
		}
		if l.nCommands >= MaxCommands {
			l.capWarn(p.display, fmt.Sprintf("more than %d commands; the rest are ignored", MaxCommands))
			return
		}
		data, ok := l.readRegular(p.fsys, dir+"/"+name, display)
		if !ok {
			continue
		}
		c := parseCommand(data, full, p.source, display, false)
		if l.add(c, p) {
			l.nCommands++
		}
	}
}

var skillNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`) })

// validSkillName follows the Agent Skills format: 1-64 characters of a-z, 0-9 and "-", no "-" at either end
// and no "--".
func validSkillName(s string) bool {
	return len(s) >= 1 && len(s) <= 64 && skillNameRE().MatchString(s)
}

// loadSkills reads <dir>/<name>/SKILL.md. A skill whose name is invalid or differs from its folder's name is
// skipped with a warning (its name is what the model and the user call it by); one with a missing name takes
// the folder's name, and one with a missing description is listed, both with a warning.
func (l *loader) loadSkills(p place) {
	for _, e := range l.readDir(p.fsys, p.dir, p.display) {
		display := p.display + "/" + e.Name()
		if l.skipEntry(e, display) || !e.IsDir() {
			continue
		}
		folder := e.Name()
		file := display + "/SKILL.md"
		if !validSkillName(folder) {
			l.warn(display, "folder name is not a valid skill name (1-64 of a-z, 0-9, -); skipped")
			continue
		}
		fi, err := fs.Lstat(p.fsys, p.dir+"/"+folder+"/SKILL.md")
		if errors.Is(err, fs.ErrNotExist) {
			l.warn(display, "no SKILL.md; skipped")
			continue
		}
		if err != nil {
			l.warn(file, fmt.Sprintf("cannot be read (%v); skipped", err))
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			l.warn(file, "symbolic link; skipped")
			continue
		}
		// A FIFO or device would block or feed the reader: only regular files are opened.
		if !fi.Mode().IsRegular() {
			l.warn(file, "not a regular file; skipped")
			continue
		}
		if l.nSkills >= MaxSkills {
			l.capWarn(p.display, fmt.Sprintf("more than %d skills; the rest are ignored", MaxSkills))
			return
		}
		data, ok := l.readRegular(p.fsys, p.dir+"/"+folder+"/SKILL.md", file)
		if !ok {
			continue
		}
		c := parseCommand(data, folder, p.source, file, true)
		if c == nil {
			continue
		}
		if c.Name != folder {
			if !validSkillName(c.Name) {
				l.warn(file, fmt.Sprintf("name %q is not a valid skill name (1-64 of a-z, 0-9, -); skipped", c.Name))
			} else {
				l.warn(file, fmt.Sprintf("name %q differs from its folder %q; skipped", c.Name, folder))
			}
			continue
		}
		if l.add(c, p) {
			l.nSkills++
		}
	}
}

func (l *loader) capWarn(display, msg string) {
	if l.capped == nil {
		l.capped = map[string]bool{}
	}
	if !l.capped[display] {
		l.capped[display] = true
		l.warn(display, msg)
	}
}

// add puts c in the set unless its name is taken; it reports whether c was added.
func (l *loader) add(c *Command, p place) bool {
	if c.Warning != "" {
		l.set.warnings = append(l.set.warnings, "Garuda: "+c.Path+": "+c.Warning)
	}
	if prev, ok := l.set.byName[c.Name]; ok {
		l.warn(c.Path, fmt.Sprintf("/%s is already defined by %s; this one is ignored", c.Name, prev.Path))
		return false
	}
	// A project's file cannot answer to a built-in's name, which defends against a repository that turns
	// the /undo the user knows into its own prompt. /review and /init are prompts in the terminal too, and
	// projects often bring their own.
	if _, builtin := builtins[c.Name]; builtin && p.source == SourceProject && c.Name != "review" && c.Name != "init" {
		l.warn(c.Path, fmt.Sprintf("/%s is a built-in command; this one is ignored", c.Name))
		return false
	}
	l.set.byName[c.Name] = c
	return true
}

func joinDisplay(display string, parts []string) string {
	if len(parts) == 0 {
		return display
	}
	return display + "/" + path.Join(parts...)
}

// parseCommand builds a Command from a file's bytes. name is the command's name from its path (a skill's
// folder); a skill's frontmatter name, when given, replaces it so that the caller can compare.
func parseCommand(data []byte, name, source, display string, skill bool) *Command {
	sum := sha256.Sum256(data)
	c := &Command{Name: name, Skill: skill, Source: source, Path: display, Hash: hex.EncodeToString(sum[:])}
	text := string(data)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	text = strings.TrimPrefix(text, "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	fm, body := splitFrontmatter(text)
	c.Body = strings.TrimSpace(body)

	var problems []string
	str := func(key string) string {
		v, ok := fm.fields[key]
		if !ok {
			return ""
		}
		if v.isList && v.str == "" {
			problems = append(problems, key+" is a list, expected text")
			return ""
		}
		return v.str // a [a, b] list as written: "[message]" is a common argument-hint
	}
	hidden, long := false, false
	clean := func(s string) string {
		out, h := oneLine(s)
		hidden = hidden || h
		// Capped because project skills' descriptions go into the system prompt before any consent.
		if r := []rune(out); len(r) > MaxFieldLen {
			out, long = string(r[:MaxFieldLen-1])+"…", true
		}
		return out
	}
	c.Description = clean(str("description"))
	c.ArgumentHint = clean(str("argument-hint"))
	c.Model = clean(str("model"))
	if v, ok := fm.fields["allowed-tools"]; ok {
		if v.isList {
			c.AllowedTools = clean(strings.Join(v.list, ", "))
		} else {
			c.AllowedTools = clean(v.str)
		}
	}
	if skill {
		if n, ok := fm.fields["name"]; ok && !n.isList {
			c.Name = strings.TrimSpace(n.str)
		} else {
			problems = append(problems, "no name; the folder's name is used")
		}
	}

	var warn []string
	if len(fm.errs) > 0 {
		detail := fm.errs[0]
		if len(fm.errs) > 1 {
			detail += fmt.Sprintf("; and %d more", len(fm.errs)-1)
		}
		warn = append(warn, "malformed frontmatter ("+detail+")")
	}
	warn = append(warn, problems...)
	if hidden {
		warn = append(warn, "hidden or control characters removed from its description fields")
	}
	if long {
		warn = append(warn, fmt.Sprintf("a description field cut at %d characters", MaxFieldLen))
	}
	if c.Description == "" && (skill || len(fm.errs) > 0) {
		warn = append(warn, "listed without a description")
	}
	c.Warning = strings.Join(warn, "; ")
	return c
}

// oneLine makes a frontmatter value one line of visible text: newlines become spaces, and control, format
// (zero-width, bidirectional) characters are removed, which defends against a description or hint that
// hides text or mimics another command in the editor's menu. It reports whether it removed any.
func oneLine(s string) (string, bool) {
	removed := false
	out := strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			removed = true
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(out), " "), removed
}

// List returns the commands and skills sorted by name, for the editor's / menu (available_commands_update).
func (s *Set) List() []Command {
	out := make([]Command, 0, len(s.commands)+len(s.skills))
	for _, c := range s.commands {
		out = append(out, *c)
	}
	for _, c := range s.skills {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Command) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Warnings returns one notice per problem found by Load, e.g.
// "Garuda: .claude/commands/x.md: malformed frontmatter (line 2: unterminated quote); listed without a description".
func (s *Set) Warnings() []string { return slices.Clone(s.warnings) }

// Skills returns the skills sorted by name: their names and descriptions go into the system prompt (a
// project's before any consent: only the body needs one).
func (s *Set) Skills() []Command {
	out := make([]Command, len(s.skills))
	for i, c := range s.skills {
		out[i] = *c
	}
	return out
}

// Skill returns a copy of the named skill, for the model's skill tool.
func (s *Set) Skill(name string) (*Command, bool) {
	c, ok := s.byName[name]
	if !ok || !c.Skill {
		return nil, false
	}
	cp := *c
	return &cp, true
}
