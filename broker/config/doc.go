// Package config reads the user's model configuration ($GARUDA_HOME/models.json over a built-in
// catalog) and credentials ($GARUDA_HOME/credentials, mode 0600), resolves which model and key a
// session uses, and writes what `garuda setup` chose. It runs in the broker.
package config
