package stream

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/adaptertest"
)

// startHost runs d in memory.
func startHost(t *testing.T, d *DropIn) *adaptertest.Host {
	t.Helper()
	return adaptertest.StartRunner(t, d.Run)
}

const userMsg = `{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"hi"}]},"parent_tool_use_id":null}`

// TestDropInTranscripts plays the CLI side of every recorded transcript
// through drop-in mode: the host must get the CLI's lines byte for byte, and
// the CLI must get the host's valid lines byte for byte.
func TestDropInTranscripts(t *testing.T) {
	files, err := filepath.Glob("../../testdata/transcripts/*.ndjson")
	if err != nil || len(files) < 70 {
		t.Fatalf("transcripts: %d files, %v", len(files), err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".ndjson"), func(t *testing.T) {
			t.Parallel()
			abs, _ := filepath.Abs(file)
			received := filepath.Join(t.TempDir(), "received")
			in, out := adaptertest.ReadTranscript(abs)
			h := startHost(t, &DropIn{Child: adaptertest.Config(t, "transcript", adaptertest.StreamJSONArgs,
				"FAKE_TRANSCRIPT="+abs, "FAKE_RECEIVED="+received)})
			raw, _ := os.ReadFile(abs)
			users, results := 0, 0
			for _, l := range bytes.Split(raw, []byte("\n")) {
				if bytes.HasPrefix(l, []byte(">> ")) {
					h.Send(string(l[3:])) // invalid lines too: ccbridge must drop them
					if gjson.ValidBytes(l[3:]) && gjson.GetBytes(l[3:], "type").Str == "user" {
						users++
					}
				}
			}
			h.In.Close()
			got := h.Rest()
			h.Wait()
			running := false
			for _, o := range out {
				switch {
				case gjson.GetBytes(o.Line, "type").Str == "result":
					results++
					running = false
				case gjson.GetBytes(o.Line, "subtype").Str == "init":
					running = true
				}
			}
			// The fake exits cleanly at the end of its input: a prompt
			// without a result of its own was merged or cancelled by the
			// CLI, and only a turn left running is lost.
			synthetic := 0
			if running {
				synthetic = max(1, users-results)
			}
			if len(got) != len(out)+synthetic {
				t.Fatalf("host got %d lines, want %d CLI lines + %d synthetic", len(got), len(out), synthetic)
			}
			for i, o := range out {
				if !bytes.Equal(got[i], o.Line) {
					t.Fatalf("line %d changed:\n got %.300s\nwant %.300s", i, got[i], o.Line)
				}
			}
			for _, l := range got[len(out):] {
				if !gjson.GetBytes(l, "ccbridge_synthetic").Bool() {
					t.Errorf("extra line is not a synthetic result: %.300s", l)
				}
			}
			gotIn, _ := os.ReadFile(received)
			var wantIn []byte
			for _, l := range in {
				wantIn = append(append(wantIn, l...), '\n')
			}
			if !bytes.Equal(gotIn, wantIn) {
				t.Errorf("the CLI received %d bytes, want the %d bytes of the host's valid lines", len(gotIn), len(wantIn))
			}
		})
	}
}

func TestDropInSIGINTInterruptsInBand(t *testing.T) {
	h := startHost(t, &DropIn{Child: adaptertest.Config(t, "turns", adaptertest.StreamJSONArgs)})
	h.Sigs <- syscall.SIGINT
	// The fake answers the interrupt; that answer must not reach the host.
	h.Send(userMsg)
	for _, want := range []string{"system", "result"} {
		if got := gjson.GetBytes(h.Next(), "type").Str; got != want {
			t.Fatalf("got a %q line, want %q (the interrupt's answer leaked?)", got, want)
		}
	}
	// A host's own control_request is answered to the host.
	h.Send(`{"type":"control_request","request_id":"mine","request":{"subtype":"interrupt"}}`)
	if l := h.Next(); gjson.GetBytes(l, "response.request_id").Str != "mine" {
		t.Fatalf("host's own control_response not passed: %s", l)
	}
	h.In.Close()
	if rest := h.Rest(); len(rest) != 0 {
		t.Errorf("unexpected lines: %q", rest)
	}
	if code := h.Wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// seqClock is a Clock whose Now gives the times in order, one a call,
// and then the last; its timers are real.
type seqClock struct {
	mu    sync.Mutex
	times []time.Time
}

func clock(times ...time.Time) *seqClock { return &seqClock{times: times} }

func (c *seqClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.times[0]
	if len(c.times) > 1 {
		c.times = c.times[1:]
	}
	return t
}

func (c *seqClock) NewTimer() adapter.Timer { return adapter.RealClock.NewTimer() }

func TestDropInSecondSIGINTShutsDown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := &DropIn{Child: adaptertest.Config(t, "turns", adaptertest.StreamJSONArgs), Clock: clock(t0, t0.Add(time.Second))}
	h := startHost(t, d)
	h.Sigs <- syscall.SIGINT
	h.Sigs <- syscall.SIGINT
	// The staged shutdown closes the child's stdin; the fake exits at EOF.
	h.Rest()
	if code := h.Wait(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

func TestDropInSIGINTsFarApartOnlyInterrupt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	d := &DropIn{Child: adaptertest.Config(t, "turns", adaptertest.StreamJSONArgs), Clock: clock(t0, t0.Add(3*time.Second))}
	h := startHost(t, d)
	h.Sigs <- syscall.SIGINT
	h.Sigs <- syscall.SIGINT
	h.Send(userMsg)
	h.Next()
	if l := h.Next(); gjson.GetBytes(l, "type").Str != "result" {
		t.Fatalf("session did not go on after two SIGINTs 3 s apart: %s", l)
	}
}

func TestDropInSIGTERMShutsDown(t *testing.T) {
	h := startHost(t, &DropIn{Child: adaptertest.Config(t, "turns", adaptertest.StreamJSONArgs)})
	h.Sigs <- syscall.SIGTERM
	h.Rest()
	h.Wait()
}

func TestDropInChildDiesMidTurn(t *testing.T) {
	h := startHost(t, &DropIn{Child: adaptertest.Config(t, "die", adaptertest.StreamJSONArgs)})
	h.Send(userMsg)
	got := h.Rest()
	if code := h.Wait(); code != 3 {
		t.Errorf("exit code %d, want the child's 3", code)
	}
	if len(got) != 3 {
		t.Fatalf("got %d lines, want init, assistant, one synthetic result", len(got))
	}
	res := got[2]
	for path, want := range map[string]string{
		"type": "result", "subtype": "error_during_execution", "is_error": "true",
		"session_id": "sess-die", "ccbridge_synthetic": "true",
	} {
		if v := gjson.GetBytes(res, path); v.String() != want {
			t.Errorf("synthetic result %s = %q, want %q", path, v.String(), want)
		}
	}
	if !strings.Contains(gjson.GetBytes(res, "errors").Raw, "fell over") {
		t.Errorf("synthetic result lacks the stderr tail: %s", res)
	}
	if !gjson.ValidBytes(res) {
		t.Errorf("synthetic result is not JSON: %s", res)
	}
}

func TestDropInLargeResultCounted(t *testing.T) {
	// A result line far larger than one read is streamed in pieces; it
	// must still count as the turn's result, so no synthetic one follows.
	const size = 3 << 20
	h := startHost(t, &DropIn{Child: adaptertest.Config(t, "bigresult", adaptertest.StreamJSONArgs, "FAKE_SIZE=3145728")})
	h.Send(userMsg)
	l := h.Next()
	if len(l) < size || gjson.GetBytes(l, "type").Str != "result" || !gjson.ValidBytes(l) {
		t.Fatalf("large result: %d bytes, type %q", len(l), gjson.GetBytes(l, "type").Str)
	}
	h.In.Close()
	if rest := h.Rest(); len(rest) != 0 {
		t.Errorf("%d lines after the large result, want none (no synthetic result)", len(rest))
	}
	h.Wait()
}

// TestDropInOutputIsUTF8: bytes of the CLI's that are not UTF-8 reach the
// host as U+FFFD, in a line passed whole and in one streamed in 64 KiB
// pieces, where a two-byte rune falls across every piece's end; every
// valid rune comes through unchanged.
func TestDropInOutputIsUTF8(t *testing.T) {
	const fill = "é\xff" // 3 bytes: a valid rune, then a byte that is not UTF-8
	for _, size := range []int{300, 3 << 20} {
		h := startHost(t, &DropIn{Child: adaptertest.Config(t, "bigresult", adaptertest.StreamJSONArgs,
			"FAKE_SIZE="+strconv.Itoa(size), "FAKE_FILL="+fill)})
		h.Send(userMsg)
		l := h.Next()
		text := gjson.GetBytes(l, "result").Str
		if !utf8.Valid(l) || !gjson.ValidBytes(l) || gjson.GetBytes(l, "type").Str != "result" {
			t.Fatalf("size %d: the host got a line that is not UTF-8 JSON (%d bytes)", size, len(l))
		}
		if n, bad := strings.Count(text, "é"), strings.Count(text, "\uFFFD"); n != size/3 || bad != size/3 {
			t.Errorf("size %d: %d é and %d U+FFFD, want %d of each", size, n, bad, size/3)
		}
		h.In.Close()
		if rest := h.Rest(); len(rest) != 0 {
			t.Errorf("size %d: %d lines after the result, want none", size, len(rest))
		}
		h.Wait()
	}
}

func TestDropInRawModeCopiesBytes(t *testing.T) {
	// Without --input-format stream-json the host's bytes go through as
	// they are, JSON or not.
	args := []string{"-p", "--output-format", "text"}
	h := startHost(t, &DropIn{Child: adaptertest.Config(t, "echo", args)})
	h.Send("not json at all")
	if l := h.Next(); string(l) != "not json at all" {
		t.Fatalf("raw line changed: %q", l)
	}
	h.In.Close()
	h.Rest()
	h.Wait()
}

func TestDropInOverlongHostLineDropped(t *testing.T) {
	h := startHost(t, &DropIn{Child: adaptertest.Config(t, "turns", adaptertest.StreamJSONArgs), MaxLine: 1024})
	h.Send(`{"type":"user","pad":"` + strings.Repeat("z", 4096) + `"}`)
	h.Send(userMsg)
	h.Next()
	res := h.Next()
	if gjson.GetBytes(res, "result").Str != "turn 1" {
		t.Fatalf("the over-long line reached the CLI, or the next did not: %s", res)
	}
}

// TestResumeIDFromArgs: the session id drop-in knows from the CLI's
// arguments.
func TestResumeIDFromArgs(t *testing.T) {
	if got := resumeIDFromArgs([]string{"--resume", "r", "--fork-session"}); got != "" {
		t.Errorf("a fork has a new id, got %q", got)
	}
	if got := resumeIDFromArgs([]string{"--resume=r", "--session-id", "s"}); got != "s" {
		t.Errorf("--session-id wins, got %q", got)
	}
}

func TestPassBlockCutsOnlyOwnAnswers(t *testing.T) {
	var out bytes.Buffer
	r := &relay{log: discardLogger(), toUI: framing.NewWriter(&out), idPrefix: "ccbridge-ab-", notify: make(chan struct{}, 1)}
	block := []byte(`{"type":"stream_event","event":{}}` + "\n" +
		`{"type":"control_response","response":{"subtype":"success","request_id":"ccbridge-ab-1","response":{}}}` + "\n" +
		`{"type":"control_response","response":{"subtype":"success","request_id":"host-1","response":{}}}` + "\n" +
		`{"duration_ms":1,"type":"result","session_id":"s9","total_cost_usd":0.25}` + "\r\n" +
		"\n" +
		`{"type":"system","subtype":"init","session_id":"s9"}` + "\n")
	if err := r.passBlock(block); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(block), `{"type":"control_response","response":{"subtype":"success","request_id":"ccbridge-ab-1","response":{}}}`+"\n", "", 1)
	if out.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", out.String(), want)
	}
	if r.results.Load() != 1 || string(r.sessionID) != "s9" || string(r.cost) != "0.25" {
		t.Errorf("results %d, session %q, cost %q", r.results.Load(), r.sessionID, r.cost)
	}
}

func TestLineType(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"stream_event","x":1}`:            "stream_event",
		`{"duration_ms":1,"type":"result"}`:        "result",
		`{"type":"a\"b","x":1}`:                    `a"b`,
		`{"x":{"type":"inner"}}`:                   "",
		`{"type" : "spaced"}`:                      "spaced",
		`{"is_error":true,"type":"result","a":[]}`: "result",
	} {
		if got := string(lineType([]byte(in))); got != want {
			t.Errorf("lineType(%s) = %q, want %q", in, got, want)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
