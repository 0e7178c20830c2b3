// The sandbox's spec of a session's commands (bash, background processes, hooks, MCP stdio servers): the project,
// the session's folders, the secrets, the environment and the limits of policy.

package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/garuda-dev/garuda/broker/guard"
	"github.com/garuda-dev/garuda/broker/sandbox"
	"github.com/garuda-dev/garuda/policy"
	execv1 "github.com/garuda-dev/garuda/proto/garuda/exec/v1"
)

// commandSpec builds the sandbox's spec of a bash call from the session and its policy state.
func (s *Service) commandSpec(sess *session, st *policy.State, op *execv1.Bash) (sandbox.Spec, error) {
	var timeout time.Duration
	if ms := op.GetTimeoutMs(); ms > 0 {
		timeout = time.Duration(ms) * time.Millisecond
	}
	spec, err := s.sandboxSpec(sess, st, op.GetCommand(), timeout, op.GetUnsandboxed())
	if err != nil {
		return spec, err
	}
	if err := os.MkdirAll(sess.outputDir, 0o700); err != nil {
		return sandbox.Spec{}, fmt.Errorf("create the session's output folder: %w", err)
	}
	spec.OutputFile = filepath.Join(sess.outputDir, fmt.Sprintf("%s-%s.log", time.Now().UTC().Format("20060102T150405"), newID()[:6]))
	return spec, nil
}

// sandboxSpec is the spec every command of a session runs with (a bash call's, a hook's): the project as cwd and
// the writable root (read-only in plan mode), the session's private temp and cache folders, the secrets hidden,
// the scrubbed environment and the limits of policy.
func (s *Service) sandboxSpec(sess *session, st *policy.State, command string, timeout time.Duration,
	unsandboxed bool) (sandbox.Spec, error) {
	work, err := s.workDirs(sess)
	if err != nil {
		return sandbox.Spec{}, err
	}
	caches := map[string]string{}
	// The session's cache folders, handed to the usual tools so that builds and tests work in the sandbox.
	for _, v := range []string{"XDG_CACHE_HOME", "GOCACHE", "npm_config_cache", "PIP_CACHE_DIR", "YARN_CACHE_FOLDER"} {
		caches[v] = filepath.Join(work.cache, strings.ToLower(v))
		os.MkdirAll(caches[v], 0o700)
	}
	spec := sandbox.Spec{
		Command:      command,
		Dir:          sess.root,
		Root:         sess.root,
		ReadOnlyRoot: st.Mode == policy.ModePlan,
		Writable:     []string{work.tmp, work.cache},
		Hidden:       s.secrets(st),
		Env:          sandbox.BaseEnv(s.userHome, work.tmp, caches),
		Timeout:      timeout,
		Unsandboxed:  unsandboxed,
		AllowWeaker:  st.Team.WeakerSandboxAllowed(),
		Limits:       commandLimits(st),
	}
	if !unsandboxed {
		spec.Network = sess.net.get() // the session's commands share its loopback
	}
	return spec, nil
}

// commandLimits are the sandbox's limits from policy (the tightest of team policy and the user's settings).
func commandLimits(st *policy.State) sandbox.Limits {
	l := policy.CommandLimits(st)
	return sandbox.Limits{MemoryBytes: int64(l.MemoryMB) << 20, Processes: l.Processes}
}

// prepareCommand makes the sandbox's spec of a command the policy allowed and takes the guard's scan before it
// (prepareRun). A failure is the Result that ends the call.
func (s *Service) prepareCommand(c *call, op *execv1.Bash) (sandbox.Spec, *guard.Watch, *execv1.Result) {
	spec, watch, err := s.prepareRun(c.sess, s.callState(c), op)
	if err != nil {
		return spec, nil, failed(err)
	}
	return spec, watch, nil
}

// prepareRun builds the sandbox's spec of a command (a background process, an MCP server's program) and takes the
// guard's scan before it (guardBefore).
func (s *Service) prepareRun(sess *session, st *policy.State, op *execv1.Bash) (sandbox.Spec, *guard.Watch, error) {
	spec, err := s.commandSpec(sess, st, op)
	if err != nil {
		return spec, nil, err
	}
	watch, err := s.guardBefore(sess, st, &spec)
	return spec, watch, err
}
