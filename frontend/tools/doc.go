// Package tools runs the model's tool calls through the broker (garuda-exec): it turns each call into a typed Call,
// answers the broker's questions through an Approver, streams progress and returns the result to the agent loop.
package tools
