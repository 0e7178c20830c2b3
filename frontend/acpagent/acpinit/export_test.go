package acpinit

// Start is start, for the tests of package acpinit_test (which import acpagent, the SDK's path, to compare).
var Start = start
