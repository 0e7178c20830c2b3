package peercred

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// Get reads the kernel's word on who is at the other end; Check serves only the listed uids.
func TestGetAndCheck(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("unix", sock)
		if err == nil {
			defer c.Close()
			buf := make([]byte, 1)
			c.Read(buf)
		}
	}()
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := Get(srv)
	if err != nil {
		t.Fatal(err)
	}
	if int(p.UID) != os.Getuid() || int(p.PID) != os.Getpid() {
		t.Fatalf("peer %+v, want uid %d pid %d", p, os.Getuid(), os.Getpid())
	}
	if err := (&Policy{UIDs: []uint32{p.UID}}).Check(p); err != nil {
		t.Fatalf("the listed uid was refused: %v", err)
	}
	if err := (&Policy{UIDs: []uint32{p.UID + 1}}).Check(p); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("an unlisted uid was served: %v", err)
	}
	if err := (&Policy{}).Check(p); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("an empty policy served a peer: %v", err)
	}
}

// A connection that is not a unix socket has no peer credentials and is refused.
func TestGetRefusesTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := Get(c); err == nil {
		t.Fatal("a TCP peer had credentials")
	}
}
