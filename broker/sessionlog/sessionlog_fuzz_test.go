package sessionlog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzReadCut writes fuzzed entries through a Writer, cuts the file anywhere and reads it back: what Read returns
// is always a prefix of what was written (the same kinds, the same JSON values), all of it when the cut falls at
// the end of a line, and otherwise an error naming the line after the prefix.
func FuzzReadCut(f *testing.F) {
	f.Add("prompt\nmessage\ntool_call\nstop", "{\n  \"text\": \"fix\\nit\",\n  \"html\": \"<b>&</b>\"\n}\x00\"plan\"\x00\x00[1,2]", uint16(50))
	f.Add("tool_result", `{"id":"c1","status":"completed","output":"ok\n"}`, uint16(65535))
	f.Add("mode\nmode", "\"\u2028\xff\"\x00{}", uint16(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, kinds, datas string, cut uint16) {
		p := filepath.Join(dir, "s1.jsonl")
		os.Remove(p)
		w := Open(dir, "s1")
		w.now = func() time.Time { return time.Unix(1e9, 0) }
		type entry struct {
			kind string
			data any
		}
		var wrote []entry
		ds := strings.Split(datas, "\x00")
		for i, k := range strings.SplitN(kinds, "\n", 8) {
			d := ""
			if i < len(ds) {
				d = ds[i]
			}
			if w.Append(k, json.RawMessage(d)) != nil {
				continue
			}
			var v any
			if d != "" {
				if err := json.Unmarshal([]byte(d), &v); err != nil {
					t.Fatalf("Append took %q, which does not decode: %v", d, err)
				}
			}
			wrote = append(wrote, entry{k, v})
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			if len(wrote) == 0 {
				return // nothing appended, no file
			}
			t.Fatal(err)
		}
		if strings.Count(string(data), "\n") != len(wrote) {
			t.Fatalf("%d entries on %d lines", len(wrote), strings.Count(string(data), "\n"))
		}
		n := int(cut) % (len(data) + 1)
		if err := os.WriteFile(p, data[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(p)
		whole := strings.Count(string(data[:n]), "\n")
		if len(got) != whole {
			t.Fatalf("cut at %d of %d: read %d entries, want the %d whole lines (err %v)", n, len(data), len(got), whole, err)
		}
		if (err != nil) != (n > 0 && data[n-1] != '\n') {
			t.Fatalf("cut at %d of %d: err %v", n, len(data), err)
		}
		if err != nil && !strings.Contains(err.Error(), "line "+itoa(whole+1)+":") {
			t.Fatalf("the error %q does not name line %d", err, whole+1)
		}
		for i, e := range got {
			var v any
			if len(e.Data) > 0 {
				if err := json.Unmarshal(e.Data, &v); err != nil {
					t.Fatal(err)
				}
			}
			if e.Kind != wrote[i].kind || !reflect.DeepEqual(v, wrote[i].data) {
				t.Fatalf("entry %d read as %s %s, written as %s %#v", i, e.Kind, e.Data, wrote[i].kind, wrote[i].data)
			}
		}
	})
}

// FuzzRead reads a fuzzed session file: it never fails without naming a line, and what it returns decodes.
func FuzzRead(f *testing.F) {
	f.Add("{\"time\":\"2001-09-09T01:46:40Z\",\"kind\":\"prompt\",\"data\":{\"text\":\"hi\"}}\n")
	f.Add("{\"kind\":\"stop\"}\n{\"kind\":")
	f.Add("\n\n[]\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data string) {
		p := filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(p)
		if err != nil && !strings.Contains(err.Error(), ": line "+itoa(len(got)+1)+": ") {
			t.Fatalf("error %q does not name line %d", err, len(got)+1)
		}
		for _, e := range got {
			if len(e.Data) > 0 && !json.Valid(e.Data) {
				t.Fatalf("entry data %q is not JSON", e.Data)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// FuzzParse checks the replay reader (parse, which Load uses): its quick path reads a line exactly as JSON does,
// and a file cut anywhere reads back as a prefix of the whole file's entries, with whole at the start of the torn
// line (or the end).
func FuzzParse(f *testing.F) {
	f.Add([]byte("{\"time\":\"2001-09-09T01:46:40Z\",\"kind\":\"header\",\"data\":{\"version\":1,\"root\":\"/p\",\"uid\":0}}\n"+
		"{\"time\":\"2001-09-09T01:46:40Z\",\"kind\":\"prompt\",\"data\":{\"text\":\"hi\"}}\n"+
		"{\"time\":\"2001-09-09T01:46:40Z\",\"kind\":\"stop\"}\n"), 40)
	f.Add([]byte("{\"time\":\"2001-09-09T01:46:40.5+02:00\",\"kind\":\"prompt\",\"data\":\"\\u2028\"}\n{\"kind\":\"x\"}\n"), 10)
	f.Add([]byte("{\"time\":\"2001-09-09T01:46:40Z\",\"kind\":\"a\",\"data\":{}}}\n"), 5)
	f.Fuzz(func(t *testing.T, data []byte, cut int) {
		for _, line := range bytes.Split(data, []byte("\n")) {
			q, ok := quickEntry(line)
			if !ok {
				continue
			}
			var e Entry
			if err := json.Unmarshal(line, &e); err != nil {
				t.Fatalf("the quick path reads %q, which is not JSON: %v", line, err)
			}
			if !q.Time.Equal(e.Time) || q.Kind != e.Kind || !sameJSON(q.Data, e.Data) {
				t.Fatalf("%q: the quick path reads %v %q %s, JSON %v %q %s", line, q.Time, q.Kind, q.Data, e.Time, e.Kind, e.Data)
			}
		}
		all, whole, err := parse(data)
		if err != nil {
			return
		}
		n := int(uint(cut) % uint(len(data)+1))
		got, w, err := parse(data[:n])
		if err != nil {
			t.Fatalf("the whole file parses, its first %d bytes do not: %v", n, err)
		}
		lines := bytes.Count(data[:n], []byte("\n"))
		if len(got) != lines || len(got) > len(all) || int(w) != bytes.LastIndexByte(data[:n], '\n')+1 {
			t.Fatalf("cut at %d: %d entries up to %d, want the %d whole lines (of %d entries up to %d)", n, len(got), w, lines,
				len(all), whole)
		}
		for i := range got {
			if !got[i].Time.Equal(all[i].Time) || got[i].Kind != all[i].Kind || !sameJSON(got[i].Data, all[i].Data) {
				t.Fatalf("cut at %d: entry %d reads %+v, whole %+v", n, i, got[i], all[i])
			}
		}
	})
}

// sameJSON compares two JSON texts as values (the quick path keeps the data's spacing as written).
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// parse is scan over a whole file's bytes, collected.
func parse(data []byte) (entries []Entry, whole int64, err error) {
	whole, err = scan(bytes.NewReader(data), func(e Entry) error {
		e.Data = bytes.Clone(e.Data)
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return entries, whole, nil
}
