package config

import "github.com/garuda-dev/garuda/internal/strictjson"

// parser walks one JSON file token by token (internal/strictjson), so that every error can name the line, a key
// given twice is an error, and an unknown key is an error rather than silently ignored (a typo in a setting must
// not be lost).
type parser struct {
	*strictjson.Decoder
}

func newParser(path string, data []byte) *parser {
	return &parser{strictjson.New(path, data)}
}
