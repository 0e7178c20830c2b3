// Package openat2 is the broker's one call of openat2(2): it retries the kernel's transient refusals (EAGAIN, when a
// rename raced with a RESOLVE_BENEATH lookup, and EINTR) a bounded number of times. broker/fsops and broker/conffile
// open every path through it.
package openat2
