package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedianAndPercentiles(t *testing.T) {
	f := newFigure("x", "ms", 5, []float64{9, 1, 3, 7, 5, 2, 4, 6, 8, 10})
	if f.Median != 5.5 || f.Min != 1 || f.Max != 10 || f.P10 != 1 || f.P90 != 9 {
		t.Errorf("median %v min %v max %v p10 %v p90 %v, want 5.5 1 10 1 9", f.Median, f.Min, f.Max, f.P10, f.P90)
	}
	if f.Met == nil || *f.Met {
		t.Errorf("median 5.5 against a target of 5: met = %v, want false", f.Met)
	}
	if g := newFigure("y", "ms", 0, []float64{3, 1, 2}); g.Median != 2 || g.Met != nil {
		t.Errorf("odd count: median %v met %v, want 2 and no target", g.Median, g.Met)
	}
}

// The /proc watches find a command by its marker and its whole tree, and see it gone once it ends.
func TestProcessWatch(t *testing.T) {
	marker := fmt.Sprintf("30.%d777", os.Getpid())
	cmd := exec.Command("sh", "-c", "sleep "+marker+" & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var found []proc
	if _, err := waitFor(context.Background(), 10*time.Second, "the sleep", func() bool {
		found = withMarker(marker)
		return len(found) == 2 // sh (its -c argument) and sleep
	}); err != nil {
		t.Fatalf("%v; found %v", err, found)
	}
	kids := descendants(cmd.Process.Pid)
	if len(kids) != 1 || !slices.Contains(found, kids[0]) {
		t.Fatalf("descendants of sh = %v, want the sleep among %v", kids, found)
	}
	sleeper := kids[0]
	if !sleeper.alive() {
		t.Fatal("the running sleep is not seen alive")
	}
	if (proc{pid: sleeper.pid, start: sleeper.start + 1}).alive() {
		t.Error("a process with another start time (a reused pid) is taken for the sleep")
	}
	if hwm, err := vmHWM(os.Getpid()); err != nil || hwm <= 0 {
		t.Errorf("vmHWM of the test = %d, %v", hwm, err)
	}
	if anon, err := rssAnon(os.Getpid()); err != nil || anon <= 0 {
		t.Errorf("rssAnon of the test = %d, %v", anon, err)
	}
	if _, err := statusBytes(os.Getpid(), "NoSuchKey"); err == nil {
		t.Error("a missing status line is not an error")
	}
	if err := exec.Command("kill", fmt.Sprint(sleeper.pid)).Run(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if _, err := waitFor(context.Background(), 10*time.Second, "the sleep to end", func() bool { return !sleeper.alive() }); err != nil {
		t.Fatal(err)
	}
	if left := withMarker(marker); len(left) != 0 {
		t.Errorf("processes left with the marker: %v", left)
	}
}

// The editor answers permission questions "once", matches responses to requests, and reports
// anything on stdout that is not JSON-RPC.
func TestEditor(t *testing.T) {
	toAgent, agentIn := io.Pipe()
	fromAgent, agentOut := io.Pipe()
	ed := newEditor(agentIn)
	go ed.read(fromAgent)
	// What the editor writes, line by line (an io.Pipe does not buffer: read it concurrently).
	lines := make(chan []byte, 8)
	go func() {
		br := bufio.NewReader(toAgent)
		for {
			l, err := br.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()

	ch, err := ed.send("initialize", map[string]any{"protocolVersion": 1})
	if err != nil {
		t.Fatal(err)
	}
	var req message
	line := <-lines
	if err := json.Unmarshal(line, &req); err != nil || req.Method != "initialize" {
		t.Fatalf("the agent read %q", line)
	}
	fmt.Fprintf(agentOut, `{"jsonrpc":"2.0","id":77,"method":"session/request_permission","params":{}}`+"\n")
	line = <-lines
	if !strings.Contains(string(line), `"id":77`) || !strings.Contains(string(line), `"optionId":"once"`) {
		t.Errorf("answer to the permission question: %s", line)
	}
	fmt.Fprintf(agentOut, `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"hello\n"}}]}}}`+"\n")
	fmt.Fprintf(agentOut, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1}}`+"\n", req.ID)
	var res struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	if _, err := await(context.Background(), ch, "initialize", 10*time.Second, &res); err != nil || res.ProtocolVersion != 1 {
		t.Fatalf("initialize: %+v %v", res, err)
	}
	ups, questions := ed.snapshot()
	if questions != 1 || !toolCompleted(ups, "t1", "hello") || toolCompleted(ups, "t2", "hello") || toolCompleted(ups, "t1", "bye") {
		t.Errorf("questions %d, updates %s", questions, ups)
	}
	if ed.err() != nil {
		t.Fatalf("error before any stray line: %v", ed.err())
	}
	fmt.Fprintln(agentOut, "log: not a protocol line")
	agentOut.Close()
	if _, err := waitFor(context.Background(), 10*time.Second, "the stray line to be reported",
		func() bool { return ed.err() != nil }); err != nil {
		t.Fatal(err)
	}
}
