package guard

import "strings"

// gitKey is one rule of runKeys: a config key (section, subsection, key) that makes git, or a program git
// starts, run a program, load more configuration, or send the repository's data to a place the key names.
type gitKey struct {
	section string
	sub     string // "": no subsection; "*": any subsection; else that subsection
	key     string // "*": any key
	when    func(value string) bool
}

// runKeys is the one list of such keys, taken from git-config(1) of git 2.39 (each key's entry says it names a
// program, a command, a path git executes, a proxy or a URL), gitattributes(5) and git-lfs-config(5). The guard
// removes them from the config of every repository a command created or changed; git never needs them to work
// (git init and git clone of a local folder write none of them).
var runKeys = []gitKey{
	// programs git runs by itself, on status, diff, log, commit, fetch, push
	{section: "core", key: "fsmonitor"},
	{section: "core", key: "hookspath"},
	{section: "core", key: "sshcommand"},
	{section: "core", key: "pager"},
	{section: "core", key: "editor"},
	{section: "core", key: "askpass"},
	{section: "core", key: "gitproxy"},
	{section: "core", key: "alternaterefscommand"},
	{section: "sequence", key: "editor"},
	{section: "pager", key: "*"},
	{section: "alias", key: "*", when: func(v string) bool { return strings.HasPrefix(strings.TrimSpace(v), "!") }},
	{section: "interactive", key: "difffilter"},
	{section: "credential", key: "helper"},
	{section: "credential", sub: "*", key: "helper"},
	{section: "diff", key: "external"},
	{section: "diff", sub: "*", key: "textconv"},
	{section: "diff", sub: "*", key: "command"},
	{section: "difftool", sub: "*", key: "cmd"},
	{section: "difftool", sub: "*", key: "path"},
	{section: "mergetool", sub: "*", key: "cmd"},
	{section: "mergetool", sub: "*", key: "path"},
	{section: "merge", sub: "*", key: "driver"},
	{section: "filter", sub: "*", key: "clean"},
	{section: "filter", sub: "*", key: "smudge"},
	{section: "filter", sub: "*", key: "process"},
	{section: "gpg", key: "program"},
	{section: "gpg", sub: "*", key: "program"},
	{section: "gpg", sub: "ssh", key: "defaultkeycommand"},
	{section: "submodule", sub: "*", key: "update", when: func(v string) bool { return strings.HasPrefix(strings.TrimSpace(v), "!") }},
	{section: "uploadpack", key: "packobjectshook"},
	{section: "remote", sub: "*", key: "receivepack"},
	{section: "remote", sub: "*", key: "uploadpack"},
	{section: "remote", sub: "*", key: "vcs"},
	{section: "man", sub: "*", key: "cmd"},
	{section: "man", sub: "*", key: "path"},
	{section: "browser", sub: "*", key: "cmd"},
	{section: "browser", sub: "*", key: "path"},
	{section: "guitool", sub: "*", key: "cmd"},
	{section: "sendemail", key: "smtpserver"},
	{section: "sendemail", key: "tocmd"},
	{section: "sendemail", key: "cccmd"},
	{section: "sendemail", key: "headercmd"},
	{section: "sendemail", sub: "*", key: "smtpserver"},
	{section: "sendemail", sub: "*", key: "tocmd"},
	{section: "sendemail", sub: "*", key: "cccmd"},
	{section: "imap", key: "tunnel"},
	// more configuration, from files a later command may write
	{section: "include", key: "path"},
	{section: "includeif", sub: "*", key: "path"},
	// what sends data elsewhere, or lets a URL run a program
	{section: "http", key: "proxy"},
	{section: "http", sub: "*", key: "proxy"},
	{section: "remote", sub: "*", key: "proxy"},
	{section: "url", sub: "*", key: "insteadof"},
	{section: "url", sub: "*", key: "pushinsteadof"},
	{section: "protocol", key: "allow", when: isAlways},
	{section: "protocol", sub: "*", key: "allow", when: isAlways},
	{section: "trace2", key: "normaltarget"},
	{section: "trace2", key: "perftarget"},
	{section: "trace2", key: "eventtarget"},
	// git-lfs: where large files are pushed, and the programs it runs
	{section: "lfs", key: "url"},
	{section: "lfs", key: "pushurl"},
	{section: "lfs", sub: "*", key: "url"},
	{section: "lfs", sub: "*", key: "pushurl"},
	{section: "lfs", sub: "*", key: "path"},
	{section: "lfs", sub: "*", key: "args"},
	{section: "lfs", sub: "*", key: "clean"},
	{section: "lfs", sub: "*", key: "smudge"},
	{section: "remote", sub: "*", key: "lfsurl"},
	{section: "remote", sub: "*", key: "lfspushurl"},
}

func isAlways(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "always") }

// runs reports whether the config entry is one of runKeys.
func runs(e entry) bool {
	section, sub, hasSub, key := e.parts()
	for _, k := range runKeys {
		if k.section != section || (k.key != "*" && k.key != key) {
			continue
		}
		switch {
		case k.sub == "" && hasSub, k.sub != "" && !hasSub, k.sub != "" && k.sub != "*" && !strings.EqualFold(k.sub, sub):
			continue
		}
		if k.when == nil || k.when(e.value) {
			return true
		}
	}
	return false
}
