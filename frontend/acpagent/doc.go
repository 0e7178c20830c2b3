// Package acpagent is Garuda's editor face: an Agent Client Protocol (ACP v1) agent over stdio that runs the model
// loop and turns every action into a broker call, and the broker's questions into session/request_permission.
package acpagent
