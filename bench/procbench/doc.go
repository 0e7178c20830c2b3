// Procbench measures the built garuda and garuda-exec binaries as an editor runs them: spawn to
// initialize, session/new, a full turn with a sandboxed command, cancel of a running command, peak
// memory and exit after stdin closes, against a local fake model server; it prints medians and spread. With -soak it
// runs many sessions in one garuda acp for a long time instead and fails when memory, descriptors, goroutines or
// processes grow (soak.go, make soak).
package main
