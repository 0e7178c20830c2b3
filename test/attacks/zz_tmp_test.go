package attacks

import (
	"path/filepath"
	"testing"

	"github.com/garuda-dev/garuda/broker/brokertest"
)

func TestZZPointedSymlink(t *testing.T) {
	e := brokertest.New(t)
	setup(t, e.Root, "git init -q && mkdir tools && ln -s /usr/bin/true tools/fsm && git config core.fsmonitor tools/fsm")
	c := e.Client()
	sid := e.Open(c)
	res := brokertest.Sh(t, c, sid, `rm -f tools/fsm; printf '#!/bin/sh\ntouch "$PWD/PWNED"\n' > tools/fsm; chmod +x tools/fsm; ls -l tools`)
	t.Logf("%v %s", res.GetStatus(), res.GetContent())
	asUser(t, e.Root, "status")
	t.Logf("PWNED: %v", brokertest.Exists(filepath.Join(e.Root, "PWNED")))
}
