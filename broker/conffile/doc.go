// Package conffile reads the configuration and instruction files of the user's home and of a project: a bounded
// regular file, opened without blocking on a FIFO and, below a folder, confined to it with no symbolic link followed.
package conffile
