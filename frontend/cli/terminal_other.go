//go:build !linux

package cli

import (
	"bufio"
	"errors"
	"os"
)

// guardStdout refuses: garuda acp runs on Linux only (on Windows, in WSL).
func guardStdout() (*os.File, error) {
	return nil, errors.New("garuda acp runs on Linux only; on Windows use WSL")
}

func isTerminal(int) bool { return false }

func readSecret(in *bufio.Reader) (string, error) { return readLine(in) }

func watchPipeReader(*os.File, func()) {}
