package acpagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// inboxSeeds are editor lines as the tests send them: prompts and cancels of a known and an unknown session,
// other requests, notifications, responses, and lines that are not JSON-RPC at all.
var inboxSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`,
	`{"jsonrpc":"2.0","id":"x","method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}`,
	`{"jsonrpc":"2.0","id":null,"method":"session/cancel","params":{"sessionId":"s1"}}`,
	`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`,
	`{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}}}`,
	`{"id":4,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text"}]}}`,
	`{"method":"session/prompt","id":5,"params":"s1"}`, `[1,2]`, `null`, `{`, `garbage`, ``,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"session/list","params":{}}`, `{"jsonrpc":"2.0","id":9,"method":5}`,
	`{"jsonrpc":"2.0","id":7,"error":"not an object"}`, `{"jsonrpc":"2.0","id":true,"method":"session/list"}`,
}

// FuzzInbox feeds a stream of lines through the inbox, some of them made longer than the SDK's limit, and reads
// it back in fuzzed chunk sizes. What the SDK gets is exactly the lines within the limit that are JSON (or blank),
// byte for byte and in order, then the reader's EOF; each over-long request with an id gets one invalid-params answer with that id,
// anything else over the limit gets none; prompts and cancels counted for the session are never more than the
// lines that could be one.
func FuzzInbox(f *testing.F) {
	f.Add(strings.Join(inboxSeeds, "\n"), uint8(0), uint8(7))
	f.Add(inboxSeeds[0]+"\n"+inboxSeeds[1]+"\n", uint8(0x81), uint8(1))
	f.Add(inboxSeeds[1]+"\n"+inboxSeeds[0], uint8(0x82), uint8(200))
	f.Add(inboxSeeds[3]+"\n"+inboxSeeds[5]+"\n"+inboxSeeds[2], uint8(0x87), uint8(0))
	f.Fuzz(func(t *testing.T, stream string, long, chunk uint8) {
		var lines []string
		for rest := stream; rest != ""; {
			line, tail, found := strings.Cut(rest, "\n")
			if found {
				line += "\n"
			}
			lines = append(lines, line)
			rest = tail
		}
		// With bit 7 of long set, the first three lines whose bit is set grow past maxLine (padded with spaces
		// before the newline); rarely, since a 10 MiB line is slow to fuzz.
		var input, want bytes.Buffer
		var overIDs []string
		for i, line := range lines {
			if i < 3 && long&0x80 != 0 && long&(1<<i) != 0 {
				body, nl := strings.CutSuffix(line, "\n")
				pad := maxLine + 1 - len(body)
				if nl {
					pad--
				}
				line = body + strings.Repeat(" ", max(pad, 0)+1)
				if nl {
					line += "\n"
				}
				for _, id := range scanIDs([]byte(line)) {
					overIDs = append(overIDs, string(id))
				}
			} else if t := bytes.TrimSpace([]byte(line)); len(t) == 0 || (t[0] == '{' && json.Valid(t) && sdkTakes(t)) {
				want.WriteString(line)
			} else {
				// A line that is not one JSON-RPC message is dropped (logged by its head), its requests answered,
				// or, with none found, one error with id null.
				ids := scanIDs([]byte(line))
				if len(ids) == 0 {
					overIDs = append(overIDs, "null")
				}
				for _, id := range ids {
					overIDs = append(overIDs, string(id))
				}
			}
			input.WriteString(line)
		}

		var out bytes.Buffer
		ready := make(chan struct{})
		close(ready) // the inbox hands nothing on before Serve is ready
		srv := &server{opts: Options{Log: slog.New(slog.DiscardHandler)}, out: newHookWriter(&out), sessions: map[string]*acpSession{},
			ready: ready}
		sess := &acpSession{srv: srv, id: "s1"}
		srv.sessions["s1"] = sess
		in := newInbox(bytes.NewReader(input.Bytes()), srv)

		var got bytes.Buffer
		buf := make([]byte, int(chunk)+1)
		var err error
		for err == nil {
			var n int
			n, err = in.Read(buf)
			got.Write(buf[:n])
		}
		if !errors.Is(err, io.EOF) {
			t.Fatalf("the input ended with %v, want EOF", err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("the SDK read %d bytes %.200q, want %d bytes %.200q", got.Len(), got.Bytes(), want.Len(), want.Bytes())
		}

		sc := bufio.NewScanner(&out)
		var answered []string
		for sc.Scan() {
			var resp struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &resp); err != nil {
				t.Fatalf("the inbox wrote a line that is not JSON: %q", sc.Bytes())
			}
			tooLarge := resp.Error.Code == -32602 && strings.Contains(resp.Error.Message, "too large")
			notJSONRPC := (resp.Error.Code == -32700 || resp.Error.Code == -32600) && strings.Contains(sc.Text(), "JSON-RPC")
			if resp.JSONRPC != "2.0" || !tooLarge && !notJSONRPC {
				t.Fatalf("the inbox wrote %q, want a too-large or not-JSON-RPC error", sc.Bytes())
			}
			answered = append(answered, string(resp.ID))
		}
		if strings.Join(answered, "\n") != strings.Join(overIDs, "\n") {
			t.Fatalf("answered ids %q, want %q", answered, overIDs)
		}

		candidates := strings.Count(want.String(), "session/prompt")
		if sess.promptsRead > candidates || sess.cancelledUpTo > sess.promptsRead {
			t.Fatalf("counted %d prompts (cancelled up to %d) in %d candidate lines", sess.promptsRead, sess.cancelledUpTo, candidates)
		}
	})
}

// sdkTakes reports whether the SDK may be given a JSON object: it decodes as the SDK's message (the types of its
// members), and a request's id is a string or a number.
func sdkTakes(obj []byte) bool {
	var m struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Method  string           `json:"method"`
		Params  json.RawMessage  `json:"params"`
		Result  json.RawMessage  `json:"result"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    any    `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(obj, &m) != nil {
		return false
	}
	if m.ID == nil || m.Method == "" {
		return true
	}
	var id any
	json.Unmarshal(*m.ID, &id)
	switch id.(type) {
	case string, float64:
		return true
	}
	return false
}

// FuzzIDScanner: the ids the scanner finds are valid JSON, and for a request whose "id" stands before or after a
// long "params", fed in pieces of any size, it is that id.
func FuzzIDScanner(f *testing.F) {
	f.Add(`"big-1"`, "session/prompt", 40, true)
	f.Add(`7`, "x/none", 0, false)
	f.Add(`{"a":[1,"}"]}`, "m", 100, true)
	f.Add(`null`, "", 3, false)
	f.Add(`"a\"}b"`, "m\"{", 1, true)
	f.Fuzz(func(t *testing.T, id, method string, piece int, idLast bool) {
		for _, got := range scanIDs([]byte(id + method)) {
			if !json.Valid(got) {
				t.Fatalf("scanIDs(%q) = %q, not JSON", id+method, got)
			}
		}
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(id)) != nil {
			return
		}
		m, _ := json.Marshal(method)
		params := `"params":{"pad":"` + strings.Repeat("p", 64) + `","id":1,"s":"\"id\":2"}`
		line := `{"id":` + compact.String() + `,"method":` + string(m) + `,` + params + "}\n"
		if idLast {
			line = `{"method":` + string(m) + `,` + params + `,"id":` + compact.String() + "}\n"
		}
		var sc idScanner
		n := 1 + max(0, piece)%len(line)
		for rest := line; rest != ""; rest = rest[min(n, len(rest)):] {
			sc.feed([]byte(rest[:min(n, len(rest))]))
		}
		got := sc.requests()
		v := compact.Bytes()
		want := 1
		if string(v) == "null" || v[0] == '{' || v[0] == '[' || len(v) > maxIDSize {
			want = 0 // not an id a request can have: no answer
		}
		if len(got) != want || want == 1 && string(got[0]) != compact.String() {
			t.Fatalf("scanning %q in pieces of %d: %q, want %q", line, n, got, compact.String())
		}
	})
}
