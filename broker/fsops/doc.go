// Package fsops is the broker's file tools (read, write, edit, glob, grep), every open confined to the project
// root with openat2 relative to a directory fd; it decides no policy and speaks no gRPC.
package fsops
