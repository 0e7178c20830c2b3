// Package tools is the front end's table of the model's tools: for each, its name, the JSON schema derived from the
// struct its input decodes into, how an editor shows it (kind, title, the file it is about) and the broker
// operation it becomes. It does no I/O: package brokerconn runs the calls.
package tools
