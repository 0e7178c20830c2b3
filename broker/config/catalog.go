package config

import "slices"

// Provider types, as the front end's model package knows them.
const (
	TypeAnthropic = "anthropic"
	TypeOpenAI    = "openai"
)

// Limits used for a model that neither the catalog nor models.json describes.
const (
	DefaultContextWindow   = 128000
	DefaultMaxOutputTokens = 8192
)

// CatalogProvider is a provider Garuda knows without any configuration.
type CatalogProvider struct {
	Name         string
	Type         string
	BaseURL      string // empty: the provider's public API
	APIKeyEnv    string
	DefaultModel string // the catalog model `garuda setup` offers first
}

// CatalogModel is a model Garuda knows without any configuration.
type CatalogModel struct {
	Name            string // what --model, GARUDA_MODEL and "default" say
	Provider        string
	ID              string // what the provider's API calls it
	ContextWindow   int
	MaxOutputTokens int
	Reasoning       string // ReasoningNone, ReasoningOptional or ReasoningAlways
}

// What a model does about reasoning (extended thinking, reasoning effort): the editor's thought_level choices.
const (
	ReasoningNone     = ""         // it does not: no thought_level
	ReasoningOptional = "optional" // it may: off, low, medium, high
	ReasoningAlways   = "always"   // it always reasons: low, medium, high
)

var builtinProviders = []CatalogProvider{
	{Name: "anthropic", Type: TypeAnthropic, APIKeyEnv: "ANTHROPIC_API_KEY", DefaultModel: "claude-sonnet-4-5"},
	{Name: "openai", Type: TypeOpenAI, APIKeyEnv: "OPENAI_API_KEY", DefaultModel: "gpt-5"},
}

var builtinModels = []CatalogModel{
	{Name: "claude-sonnet-5", Provider: "anthropic", ID: "claude-sonnet-5",
		ContextWindow: 200000, MaxOutputTokens: 64000, Reasoning: ReasoningOptional},
	{Name: "claude-opus-4-5", Provider: "anthropic", ID: "claude-opus-4-5",
		ContextWindow: 200000, MaxOutputTokens: 64000, Reasoning: ReasoningOptional},
	{Name: "claude-sonnet-4-5", Provider: "anthropic", ID: "claude-sonnet-4-5",
		ContextWindow: 200000, MaxOutputTokens: 64000, Reasoning: ReasoningOptional},
	{Name: "claude-haiku-4-5", Provider: "anthropic", ID: "claude-haiku-4-5",
		ContextWindow: 200000, MaxOutputTokens: 64000, Reasoning: ReasoningOptional},
	{Name: "claude-opus-4-1", Provider: "anthropic", ID: "claude-opus-4-1",
		ContextWindow: 200000, MaxOutputTokens: 32000, Reasoning: ReasoningOptional},
	{Name: "gpt-5", Provider: "openai", ID: "gpt-5", ContextWindow: 400000, MaxOutputTokens: 128000, Reasoning: ReasoningAlways},
	{Name: "gpt-5-mini", Provider: "openai", ID: "gpt-5-mini", ContextWindow: 400000, MaxOutputTokens: 128000, Reasoning: ReasoningAlways},
	{Name: "gpt-5-nano", Provider: "openai", ID: "gpt-5-nano", ContextWindow: 400000, MaxOutputTokens: 128000, Reasoning: ReasoningAlways},
	{Name: "gpt-4.1", Provider: "openai", ID: "gpt-4.1", ContextWindow: 1047576, MaxOutputTokens: 32768},
	{Name: "gpt-4.1-mini", Provider: "openai", ID: "gpt-4.1-mini", ContextWindow: 1047576, MaxOutputTokens: 32768},
}

// Catalog returns the built-in models, for `garuda setup` to offer.
func Catalog() []CatalogModel { return slices.Clone(builtinModels) }

// Providers returns the built-in providers, for `garuda setup` to offer.
func Providers() []CatalogProvider { return slices.Clone(builtinProviders) }
