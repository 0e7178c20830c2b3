// Package sandbox runs shell commands confined by Linux namespaces, Landlock, seccomp, memory and process
// limits, and ends their whole process tree on cancel.
package sandbox
