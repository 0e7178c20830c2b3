# Lines over 140 columns in the Go files named, for make lint: FILE:LINE: N columns. A line may run over only where
# column 141 lies inside a raw (backquoted) string, whose text is data: struct tags, fixtures, the system prompt.
FNR == 1 { raw = 0 }
{
	n = length($0); st = raw ? "r" : ""; at = ""
	if (index($0, "`") == 0) { at = st }
	else for (i = 1; i <= n; i++) {
		if (i == 141) at = st
		c = substr($0, i, 1)
		if (st == "r") { if (c == "`") st = "" }
		else if (st == "d") { if (c == "\\") i++; else if (c == "\"") st = "" }
		else if (st == "q") { if (c == "\\") i++; else if (c == "'") st = "" }
		else if (c == "`") st = "r"
		else if (c == "\"") st = "d"
		else if (c == "'") st = "q"
		else if (c == "/" && substr($0, i + 1, 1) == "/") break
	}
	raw = (st == "r")
	if (n > 140 && at != "r") print FILENAME ":" FNR ": " n " columns"
}
