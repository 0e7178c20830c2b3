// Package policy is Garuda's permission engine: pure code, with no file, network or process I/O, that decides
// whether the broker may perform a request (allow, ask or deny) and says why and by which rule.
package policy
