package acpagent

// Ids of the session's config options.
const (
	configModel   = "model"
	configThought = "thought_level"
	configMode    = "mode"
)
