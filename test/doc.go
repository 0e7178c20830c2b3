// Package test holds the tests that look at Garuda from outside: guards on the code's shape (the powerless front
// end, the privileged binary's reviewed dependencies) and process tests that build and run the real binaries.
package test
