package brokerconn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/garuda-dev/garuda/frontend/brokerconn/spawn"
)

// start runs garuda-exec with one end of a socketpair as its fd 3, or takes the one package spawn started at
// initialisation for garuda acp or run. A process started here is started in the background (its fork and exec take about
// a millisecond that the front end need not wait for: an editor's initialize is answered meanwhile); Spawned closes
// once it has started or failed to, and a failure is the broker's end (Done, Err).
func (b *Broker) start(o Options) (net.Conn, error) {
	if e := spawn.Take(); e != nil && o.Exec == "" && o.OwnGroup == e.OwnGroup {
		c, err := net.FileConn(e.Conn)
		e.Conn.Close()
		p := spawn.Process(e.Pid)
		if err == nil {
			b.Path, b.proc, b.own = e.Path, p, true
			close(b.spawned)
			go b.reap()
			return c, nil
		}
		p.Kill()
		p.Wait()
	} else if e != nil {
		e.Conn.Close() // not the broker asked for
		p := spawn.Process(e.Pid)
		p.Kill()
		p.Wait()
	}
	path := o.Exec
	if path == "" {
		p, err := Find()
		if err != nil {
			return nil, err
		}
		path = p
	} else if !spawn.Executable(path) {
		return nil, fmt.Errorf("%s is missing or not executable; reinstall garuda (make install)", path)
	}
	b.Path, b.own = path, true
	// The broker refuses a relative GARUDA_HOME, and no GARUDA_HOME with no absolute $HOME, and exits; said here, the
	// user reads why instead of a reset socket.
	if h := os.Getenv("GARUDA_HOME"); h != "" && !filepath.IsAbs(h) {
		return nil, fmt.Errorf("GARUDA_HOME=%s must be an absolute path (it is where Garuda keeps its settings and keys)", h)
	} else if uh, err := os.UserHomeDir(); h == "" && (err != nil || !filepath.IsAbs(uh)) {
		return nil, errors.New("HOME is not set to an absolute path, so Garuda cannot find ~/.garuda, where it keeps its " +
			"settings and keys: set HOME, or GARUDA_HOME to an absolute folder")
	}
	mine, theirs, err := spawn.Socketpair()
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	go func() {
		pid, err := spawn.Start(path, theirs, o.OwnGroup)
		theirs.Close()
		if err == nil {
			b.proc = spawn.Process(pid)
		}
		close(b.spawned)
		if err != nil {
			c.Close()
			b.gone(fmt.Errorf("start %s: %w", path, err))
			close(b.waited)
			return
		}
		b.reap()
	}()
	return c, nil
}

// reap waits for the broker's process to end and reports it gone.
func (b *Broker) reap() {
	st, err := b.proc.Wait()
	switch {
	case err == nil && st.Success():
		err = errors.New("it exited")
	case err == nil:
		err = errors.New(st.String())
	}
	b.gone(fmt.Errorf("the broker (%s) exited unexpectedly: %v", filepath.Base(b.Path), err))
	close(b.waited)
}
