// Package guard keeps a sandboxed command from leaving behind what git, hook managers or editors run later,
// outside the sandbox: it scans the root before and after each run and undoes what the run left for them.
package guard
