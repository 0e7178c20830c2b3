// Package sandbox runs shell commands confined by Linux namespaces, Landlock, seccomp and a process limit, and ends
// their whole process tree on cancel.
package sandbox
