// Package commands finds the custom slash commands and Agent Skills of a project and of the user, resolves a
// "/name args" prompt into the text the model gets (or a message that answers without the model), and keeps the
// content-pinned consents a project's own command or skill needs before its first use. It is pure logic over
// fs.FS values; the broker passes it confined file systems and does the asking.
package commands
