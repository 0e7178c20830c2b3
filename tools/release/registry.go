package main

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The ACP Registry (github.com/agentclientprotocol/registry) lists an agent as a folder named for its id holding
// agent.json and icon.svg. Its CI checks them with agent.schema.json and .github/workflows/build_registry.py; the
// rules below are those, read from the registry's repository (schema and build script of 2026-08, CONTRIBUTING.md
// and FORMAT.md), plus Garuda's own (checkRelease). No network: the registry's check that each archive URL answers
// 200 can only pass once the GitHub release is published.

// entryDir is where a release puts Garuda's registry folder.
const entryDir = "registry/garuda"

//go:embed icon.svg
var icon []byte

// description is the registry's one-line description; it says where Garuda runs.
const description = "A coding agent whose commands run in an OS sandbox (Landlock, namespaces, seccomp), with " +
	"approvals, undo and a tamper-evident audit log; Claude, OpenAI or an OpenAI-compatible local model. " +
	"Linux only (x86_64, aarch64): the macOS and Windows builds only say that they cannot run there; on Windows, use WSL."

type agentEntry struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository"`
	Authors      []string     `json:"authors"`
	License      string       `json:"license"`
	LicenseURL   string       `json:"license_url"`
	Distribution distribution `json:"distribution"`
}

type distribution struct {
	Binary map[string]binaryTarget `json:"binary"`
}

type binaryTarget struct {
	Archive string   `json:"archive"`
	SHA256  string   `json:"sha256"`
	Cmd     string   `json:"cmd"`
	Args    []string `json:"args"`
}

// newEntry is the registry entry of a release whose archives have the given SHA-256s.
func newEntry(version string, sums map[string]string) agentEntry {
	e := agentEntry{
		ID:          "garuda",
		Name:        "Garuda",
		Version:     version,
		Description: description,
		Repository:  repository,
		Authors:     []string{"The Garuda authors"},
		License:     "Apache-2.0",
		LicenseURL:  repository + "/blob/v" + version + "/LICENSE",
	}
	e.Distribution.Binary = map[string]binaryTarget{}
	for _, p := range platforms {
		name := p.archive(version)
		e.Distribution.Binary[p.name] = binaryTarget{
			Archive: downloadURL(version, name),
			SHA256:  sums[name],
			Cmd:     "./" + p.exe("garuda"),
			Args:    []string{"acp"},
		}
	}
	return e
}

// writeEntry writes agent.json and icon.svg into dir.
func writeEntry(dir, version string, sums map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(newEntry(version, sums), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "icon.svg"), icon, 0o644)
}

// checkRelease checks the release in dist: the registry folder by the registry's rules, and Garuda's own rules
// (every archive holds its platform's programs and is listed with its exact URL, command and SHA-256, the sums file
// agreeing with the archives). It returns the problems found, each naming its file.
func checkRelease(dist, version string) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	dir := filepath.Join(dist, entryDir)
	agentJSON, err := os.ReadFile(filepath.Join(dir, "agent.json"))
	if err != nil {
		bad("%v", err)
		return problems
	}
	for _, p := range checkAgentJSON(filepath.Base(dir), agentJSON) {
		bad("agent.json: %s", p)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "icon.svg"))
	if err != nil {
		bad("%v (the registry requires an icon)", err)
	} else {
		for _, p := range checkIcon(svg) {
			bad("icon.svg: %s", p)
		}
	}

	var e agentEntry
	dec := json.NewDecoder(bytes.NewReader(agentJSON))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		bad("agent.json: %v", err)
		return problems
	}
	want := func(field, got, wanted string) {
		if got != wanted {
			bad("agent.json: %s is %q, want %q", field, got, wanted)
		}
	}
	want("id", e.ID, "garuda")
	want("version", e.Version, version)
	want("repository", e.Repository, repository)
	want("license", e.License, "Apache-2.0")
	for _, word := range []string{"Linux", "WSL"} {
		if !strings.Contains(e.Description, word) {
			bad("agent.json: the description does not say where Garuda runs (no %q)", word)
		}
	}

	sumsData, err := os.ReadFile(filepath.Join(dist, sumsFile))
	if err != nil {
		bad("%v", err)
		return problems
	}
	sums, err := parseSums(sumsData)
	if err != nil {
		bad("%v", err)
		return problems
	}
	var names []string
	for _, p := range platforms {
		name := p.archive(version)
		names = append(names, name)
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			bad("%v", err)
			continue
		}
		members, err := memberNames(data, p.goos == "windows")
		if err != nil {
			bad("%s: %v", name, err)
		}
		for _, prog := range p.programs() {
			if err == nil && !slices.Contains(members, p.exe(prog)) {
				bad("%s: no %s in the archive", name, p.exe(prog))
			}
		}
		h := sha256.Sum256(data)
		sum := hex.EncodeToString(h[:])
		if sums[name] != sum {
			bad("%s: %s says %q, the archive's SHA-256 is %s", sumsFile, name, sums[name], sum)
		}
		t, ok := e.Distribution.Binary[p.name]
		if !ok {
			bad("agent.json: no binary for %s", p.name)
			continue
		}
		key := "distribution.binary." + p.name
		want(key+".archive", t.Archive, downloadURL(version, name))
		want(key+".sha256", t.SHA256, sum)
		want(key+".cmd", t.Cmd, "./"+p.exe("garuda"))
		if !slices.Equal(t.Args, []string{"acp"}) {
			bad("agent.json: %s.args is %q, want [acp]", key, t.Args)
		}
	}
	for plat := range e.Distribution.Binary {
		if !slices.ContainsFunc(platforms, func(p platform) bool { return p.name == plat }) {
			bad("agent.json: a binary for %s, which the release does not build", plat)
		}
	}
	for name := range sums {
		if !slices.Contains(names, name) {
			bad("%s: lists %s, which is not an archive of the release", sumsFile, name)
		}
	}
	return problems
}

// The registry's rules for agent.json.
var (
	idPattern       = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	versionPattern  = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`)
	sha256Pattern   = regexp.MustCompile(`^[a-fA-F0-9]{64}$`)
	urlVersion      = regexp.MustCompile(`/(?:download|releases)/v?([0-9.]+)/`)
	registryTargets = []string{"darwin-aarch64", "darwin-x86_64", "linux-aarch64", "linux-x86_64", "windows-aarch64", "windows-x86_64"}
	osFamilies      = []string{"darwin", "linux", "windows"}
	// The schema leaves the top level open; Garuda refuses any other field, so that a misspelt one is caught.
	topFields = []string{"id", "name", "version", "description", "repository", "website", "authors", "license",
		"license_url", "icon", "distribution"}
	targetFields     = []string{"archive", "sha256", "cmd", "args", "env"}
	packageFields    = []string{"package", "args", "env"}
	installerFormats = []string{".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage"}
)

// checkAgentJSON checks agent.json, in the folder named dir, by the registry's schema and build script. Where the
// registry only warns (an OS family without a build), Garuda's check fails.
func checkAgentJSON(dir string, data []byte) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return []string{"not valid JSON: " + err.Error()}
	}
	if dec.More() {
		return []string{"more than one JSON value"}
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return []string{"not a JSON object"}
	}
	for _, f := range []string{"id", "name", "version", "description", "distribution"} {
		if _, ok := m[f]; !ok {
			bad("missing required field %q", f)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(topFields, k) {
			bad("unknown field %q", k)
		}
	}
	str := func(obj map[string]any, where, key string) (string, bool) {
		v, ok := obj[key]
		if !ok {
			return "", false
		}
		s, ok := v.(string)
		if !ok {
			bad("%s%s must be a string", where, key)
		}
		return s, ok
	}
	if id, ok := str(m, "", "id"); ok {
		switch {
		case !idPattern.MatchString(id):
			bad("id %q: lowercase letters, digits and hyphens only, starting with a letter", id)
		case id != dir:
			bad("id %q must match its folder's name %q", id, dir)
		}
	}
	for _, k := range []string{"name", "description"} {
		if s, ok := str(m, "", k); ok && s == "" {
			bad("%s is empty", k)
		}
	}
	version, _ := str(m, "", "version")
	if _, ok := m["version"]; ok && !registryVersion(version) {
		bad("version %q is not a semantic version (x.y.z, each part a number)", version)
	}
	for _, k := range []string{"repository", "website", "license_url"} {
		if s, ok := str(m, "", k); ok && !isURI(s) {
			bad("%s %q is not an absolute URL", k, s)
		}
	}
	str(m, "", "license")
	str(m, "", "icon")
	if v, ok := m["authors"]; ok && !isStrings(v) {
		bad("authors must be a list of strings")
	}

	dv, ok := m["distribution"]
	if !ok {
		return problems
	}
	d, ok := dv.(map[string]any)
	if !ok || len(d) == 0 {
		bad("distribution must be an object with at least one method")
		return problems
	}
	for _, k := range slices.Sorted(maps.Keys(d)) {
		switch k {
		case "binary":
			checkBinary(d[k], version, bad)
		case "npx", "uvx":
			pm, ok := object(d[k], "distribution."+k, packageFields, bad)
			if !ok {
				continue
			}
			if p, ok := str(pm, "distribution."+k+".", "package"); !ok || p == "" {
				bad("distribution.%s needs a package", k)
			} else if strings.Contains(strings.ToLower(p), "@latest") {
				bad("distribution.%s: package %q uses @latest; name the version", k, p)
			}
		default:
			bad("unknown distribution type %q (binary, npx or uvx)", k)
		}
	}
	return problems
}

// object returns v as an object whose fields are all in fields; what is not is reported as at where.
func object(v any, where string, fields []string, bad func(string, ...any)) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		bad("%s must be an object", where)
		return nil, false
	}
	for _, f := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(fields, f) {
			bad("%s: unknown field %q", where, f)
		}
	}
	return m, true
}

func checkBinary(v any, version string, bad func(string, ...any)) {
	b, ok := v.(map[string]any)
	if !ok || len(b) == 0 {
		bad("distribution.binary must be an object with at least one platform")
		return
	}
	families := map[string]bool{}
	for _, plat := range slices.Sorted(maps.Keys(b)) {
		where := "distribution.binary." + plat
		if !slices.Contains(registryTargets, plat) {
			bad("%s: unknown platform (the registry's are %s)", where, strings.Join(registryTargets, ", "))
			continue
		}
		families[strings.Split(plat, "-")[0]] = true
		t, ok := object(b[plat], where, targetFields, bad)
		if !ok {
			continue
		}
		if av, ok := t["archive"]; !ok {
			bad("%s: missing archive", where)
		} else if a, ok := av.(string); !ok || !isURI(a) {
			bad("%s.archive must be an absolute URL", where)
		} else {
			for _, ext := range installerFormats {
				if strings.HasSuffix(strings.ToLower(a), ext) {
					bad("%s.archive: %s is an installer format; the registry takes .zip, .tar.gz, .tgz, .tar.bz2, .tbz2 or a raw binary", where, ext)
				}
			}
			if strings.Contains(a, "/latest/") {
				bad("%s.archive uses /latest/; name the version", where)
			} else if mv := urlVersion.FindStringSubmatch(a); mv != nil && normalizeVersion(mv[1]) != version {
				bad("%s.archive is of version %s, the entry's is %s", where, normalizeVersion(mv[1]), version)
			}
		}
		if sv, ok := t["sha256"]; ok {
			if s, ok := sv.(string); !ok || !sha256Pattern.MatchString(s) {
				bad("%s.sha256 must be 64 hex digits", where)
			}
		}
		if cv, ok := t["cmd"]; !ok {
			bad("%s: missing cmd", where)
		} else if _, ok := cv.(string); !ok {
			bad("%s.cmd must be a string", where)
		}
		if av, ok := t["args"]; ok && !isStrings(av) {
			bad("%s.args must be a list of strings", where)
		}
		if ev, ok := t["env"]; ok {
			em, ok := ev.(map[string]any)
			if ok {
				for _, val := range em {
					if _, s := val.(string); !s {
						ok = false
					}
				}
			}
			if !ok {
				bad("%s.env must map names to strings", where)
			}
		}
	}
	for _, f := range osFamilies {
		if !families[f] {
			bad("distribution.binary has no build for %s (the registry warns; Garuda ships every OS family)", f)
		}
	}
}

// registryVersion is the registry's test of a version: the schema's pattern, and the first three dot-separated
// parts all digits.
func registryVersion(v string) bool {
	parts := strings.Split(v, ".")
	if !versionPattern.MatchString(v) || len(parts) < 3 {
		return false
	}
	for _, p := range parts[:3] {
		if _, err := strconv.ParseUint(p, 10, 64); err != nil {
			return false
		}
	}
	return true
}

// normalizeVersion pads or cuts a version to three parts, as the registry does with the version in a URL.
func normalizeVersion(v string) string {
	parts := strings.Split(v, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	return strings.Join(parts[:3], ".")
}

func isURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

func isStrings(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, x := range list {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

// The registry's rules for icon.svg.
var (
	allowedPaint = []string{"currentcolor", "none", "inherit"}
	unitSuffix   = regexp.MustCompile(`(?i)[a-z%]+$`)
	cssPaint     = regexp.MustCompile(`(?i)\b(fill|stroke)\s*:\s*([^;}\s]+)`)
)

// checkIcon checks icon.svg by the registry's build script: XML with an <svg> root, no comment, 16×16 and square
// (width and height, else the viewBox), and monochrome: every fill and stroke (attribute, inline style or <style>
// rule) currentColor, none or inherit, with currentColor used at least once.
func checkIcon(data []byte) []string {
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if bytes.Contains(data, []byte("<!--")) {
		bad("has a comment, which breaks the registry's MDX pages")
	}
	usesCurrentColor := false
	paint := func(what, value string) {
		v := strings.ToLower(strings.TrimSpace(value))
		switch {
		case v == "currentcolor":
			usesCurrentColor = true
		case !slices.Contains(allowedPaint, v):
			bad("%s %q: only currentColor, none or inherit", what, value)
		}
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root *xml.StartElement
	var style *strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			bad("not valid XML: %v", err)
			return problems
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == nil {
				r := t.Copy()
				root = &r
				if t.Name.Local != "svg" {
					bad("the root element is <%s>, not <svg>", t.Name.Local)
					return problems
				}
			}
			for _, a := range t.Attr {
				if a.Name.Space != "" {
					continue
				}
				switch a.Name.Local {
				case "fill", "stroke":
					paint(a.Name.Local, a.Value)
				case "style":
					for _, decl := range strings.Split(a.Value, ";") {
						name, value, ok := strings.Cut(decl, ":")
						if n := strings.ToLower(strings.TrimSpace(name)); ok && (n == "fill" || n == "stroke") {
							paint("style "+n, value)
						}
					}
				}
			}
			if t.Name.Local == "style" {
				style = &strings.Builder{}
			}
		case xml.CharData:
			if style != nil {
				style.Write(t)
			}
		case xml.EndElement:
			if t.Name.Local == "style" && style != nil {
				for _, m := range cssPaint.FindAllStringSubmatch(style.String(), -1) {
					paint("<style> "+strings.ToLower(m[1]), m[2])
				}
				style = nil
			}
		}
	}
	if root == nil {
		bad("no <svg> element")
		return problems
	}
	attr := func(name string) (string, bool) {
		for _, a := range root.Attr {
			if a.Name.Space == "" && a.Name.Local == name {
				return a.Value, true
			}
		}
		return "", false
	}
	var w, h float64
	sized := false
	ws, okW := attr("width")
	hs, okH := attr("height")
	if okW && okH {
		wv, errW := strconv.ParseFloat(unitSuffix.ReplaceAllString(strings.TrimSpace(ws), ""), 64)
		hv, errH := strconv.ParseFloat(unitSuffix.ReplaceAllString(strings.TrimSpace(hs), ""), 64)
		if errW == nil && errH == nil {
			w, h, sized = wv, hv, true
		}
	}
	if vb, ok := attr("viewBox"); ok && !sized {
		if f := strings.Fields(vb); len(f) == 4 {
			wv, errW := strconv.ParseFloat(f[2], 64)
			hv, errH := strconv.ParseFloat(f[3], 64)
			if errW == nil && errH == nil {
				w, h, sized = wv, hv, true
			}
		}
	}
	switch {
	case !sized:
		bad("no width and height, and no viewBox")
	case w != h:
		bad("not square (%gx%g)", w, h)
	case w != 16:
		bad("%gx%g, want 16x16", w, h)
	}
	if !usesCurrentColor {
		bad("uses no currentColor, so it cannot follow the editor's theme")
	}
	return problems
}
