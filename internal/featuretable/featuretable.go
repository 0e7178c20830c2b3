// Package featuretable writes the table of what the sandbox enforces, as `garuda doctor` (from the broker's Hello)
// and `garuda-exec doctor` (from its own probe) both show it.
package featuretable

import (
	"fmt"
	"io"
)

// Row is one protection: its name, whether it is enforced here, and why or how.
type Row struct {
	Name     string
	Enforced bool
	Detail   string
}

// Write writes the rows as tab-separated lines (for a tabwriter): name, yes or no, detail.
func Write(w io.Writer, rows []Row) {
	for _, r := range rows {
		yes := "no"
		if r.Enforced {
			yes = "yes"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", r.Name, yes, r.Detail)
	}
}
