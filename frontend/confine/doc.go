// Package confine takes the front end's own power away once it has started the broker: Landlock with no write and
// no execute anywhere and reads only of what DNS needs, and no_new_privs. It is defence in depth; the broker's
// sandbox is the boundary.
package confine
