package acpinit

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unsafe"

	"github.com/garuda-dev/garuda/frontend/brokerconn/spawn"
	"github.com/garuda-dev/garuda/internal/version"
)

// init starts reading `garuda acp`'s input, to answer the editor's initialize at once, when garuda acp is sure to
// serve it: its arguments are none or --model's, and its broker was started at initialisation (package spawn:
// anything else is left to main, which may refuse to start). The answer goes to a duplicate of stdout, made here,
// before main points stdout at stderr; main reads the input through Take. An initialize already written when
// garuda acp starts, as editors write it, is answered here, before the other packages initialise; one that comes
// later is answered as it comes, beside them.
//
// Nothing here reads more than the editor's first line before main confines the front end, as the SDK did before.
func init() {
	if len(os.Args) < 2 || os.Args[1] != "acp" || !onlyModel(os.Args[2:]) || !spawn.Started() {
		return
	}
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, 1, syscall.F_DUPFD_CLOEXEC, 3)
	if errno != 0 {
		return
	}
	var ready int32
	syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCINQ, uintptr(unsafe.Pointer(&ready))) // FIONREAD
	// The editor may stop garuda acp as soon as initialize is answered: SIGTERM and SIGINT are caught from here on,
	// for main to end as it does for them (Caught), not killed before main.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	early = start(os.Stdin, os.NewFile(fd, "protocol"), version.Version, int(ready))
	early.sig = sig
}

// onlyModel reports whether args are none, or --model's value alone, as garuda acp's flags parse them.
func onlyModel(args []string) bool {
	switch {
	case len(args) == 0:
		return true
	case len(args) == 1:
		name, _, ok := strings.Cut(args[0], "=")
		return ok && (name == "-model" || name == "--model")
	case len(args) == 2:
		return args[0] == "-model" || args[0] == "--model"
	}
	return false
}
