// Package webfetch fetches one web page for the model through the network guard, hop by hop, each hop decided
// first, and turns it into text: HTML into Markdown, other text as it is, binaries refused.
package webfetch
