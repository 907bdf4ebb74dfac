// Package adaptertest holds what the adapter packages' tests share: the
// fake Claude Code CLI (this file) and Host, which runs a session in
// memory as a UI would. The fake is the test binary re-run as a child, in
// a mode a test names. A
// package's TestMain calls Main; its tests start the fake with Config
// and add modes of their own with Register. The modes here (transcript,
// turns, die, bigresult, echo, session) are shared by every package.
//
// It is for tests only: nothing but _test.go files imports it.
package adaptertest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// Env names the mode the test binary plays when it is started as the fake.
const Env = "CCBRIDGE_FAKE_CLI"

var (
	fakeModes  = map[string]func(){}
	shared     = map[string]bool{}
	fakeUsedMu sync.Mutex
	fakeUsed   = map[string]bool{}
)

// Register adds a mode, from an init function of a package's tests. Main
// fails a full run in which a mode a package registered was never used.
func Register(name string, fn func()) {
	if _, dup := fakeModes[name]; dup {
		panic("duplicate fake CLI mode " + name)
	}
	fakeModes[name] = fn
}

// Main is a test package's TestMain: it plays the mode the environment
// names when the binary was started as the fake (or as the guardian of
// guarded commands), and otherwise runs the tests.
func Main(m *testing.M) {
	// The test binary is the guardian of guarded commands, as ccbridge is.
	if len(os.Args) > 1 && os.Args[1] == session.GuardianArg {
		os.Exit(session.RunGuardian(os.Args[2:]))
	}
	if mode := os.Getenv(Env); mode != "" {
		fn, ok := fakeModes[mode]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown fake CLI mode %q\n", mode)
			os.Exit(99)
		}
		fn()
		os.Exit(0)
	}
	code := m.Run()
	if code == 0 && !testing.Short() {
		var unused []string
		for name := range fakeModes {
			if !fakeUsed[name] && !shared[name] {
				unused = append(unused, name)
			}
		}
		sort.Strings(unused)
		if len(unused) > 0 && os.Getenv("CCBRIDGE_ONLY") == "" && !strings.Contains(strings.Join(os.Args, " "), "-test.run") {
			fmt.Fprintf(os.Stderr, "fake CLI modes never used: %v\n", unused)
			code = 1
		}
	}
	os.Exit(code)
}

// Config is a session config that starts the fake CLI in mode.
func Config(t testing.TB, mode string, args []string, env ...string) session.Config {
	fakeUsedMu.Lock()
	fakeUsed[mode] = true
	fakeUsedMu.Unlock()
	return session.Config{
		Path:      os.Args[0],
		Args:      args,
		Env:       append([]string{Env + "=" + mode}, env...),
		Grace:     2e9,
		TermGrace: 1e9,
	}
}

// SaveSession (with FAKE_SAVE=1) appends a user line to the session's
// file, where the real CLI keeps it: $HOME/.claude/projects/<working directory's name>/<id>.jsonl
// (the tests give each session a HOME of its own).
func SaveSession(sid string, line []byte) {
	cwd, _ := os.Getwd()
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	dir := clifiles.ProjectDir(clifiles.ConfigDir(os.Getenv), cwd)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, sid+".jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, `{"type":"user","sessionId":%q,"message":%s}`+"\n", sid, gjson.GetBytes(line, "message").Raw)
}

// StreamJSONArgs is what drop-in hosts pass.
var StreamJSONArgs = []string{"--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}

func init() {
	// transcript: plays the CLI side of the transcript named by
	// FAKE_TRANSCRIPT. Each "<<" line is written once every ">>" line
	// before it (that is valid JSON) has been read; what was read is
	// written to FAKE_RECEIVED.
	Share("transcript", func() {
		in, out := ReadTranscript(os.Getenv("FAKE_TRANSCRIPT"))
		_ = in
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		w := bufio.NewWriter(os.Stdout)
		var received bytes.Buffer
		read := 0
		for _, o := range out {
			for read < o.After {
				line, err := stdin.ReadBytes('\n')
				if err != nil {
					break
				}
				received.Write(line)
				read++
			}
			w.Write(o.Line)
			w.WriteByte('\n')
			w.Flush()
		}
		// Then read the rest until EOF, as the CLI does.
		for {
			line, err := stdin.ReadBytes('\n')
			received.Write(line)
			if err != nil {
				break
			}
		}
		os.WriteFile(os.Getenv("FAKE_RECEIVED"), received.Bytes(), 0o644)
	})

	// turns: answers every user line with an init and a result; answers
	// an interrupt control_request with a control_response. Exits at EOF
	// with code 0.
	Share("turns", func() {
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		n := 0
		for {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				return
			}
			switch gjson.GetBytes(line, "type").Str {
			case "user":
				n++
				fmt.Printf(`{"type":"system","subtype":"init","session_id":"sess-1"}`+"\n"+
					`{"duration_ms":1,"type":"result","subtype":"success","is_error":false,"result":"turn %d","session_id":"sess-1","total_cost_usd":0.5}`+"\n", n)
			case "control_request":
				fmt.Printf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"still_queued":[]}}}`+"\n",
					gjson.GetBytes(line, "request_id").Str)
			}
		}
	})

	// die: reads one user line, starts the turn with a large frame and an
	// init carrying the session id, then exits with code 3 and a last word
	// on stderr.
	Share("die", func() {
		stdin := bufio.NewReader(os.Stdin)
		if _, err := stdin.ReadBytes('\n'); err != nil {
			os.Exit(9)
		}
		big := strings.Repeat("x", 300<<10)
		fmt.Printf(`{"type":"system","subtype":"init","session_id":"sess-die"}` + "\n")
		fmt.Printf(`{"type":"assistant","message":{"content":[{"type":"text","text":%q}]},"session_id":"sess-die"}`+"\n", big)
		fmt.Fprintln(os.Stderr, "fatal: the fake CLI fell over")
		os.Exit(3)
	})

	// bigresult: answers a user line with a result line of FAKE_SIZE bytes
	// whose type key comes last, then waits for EOF. The text is y's, or
	// FAKE_FILL repeated (FAKE_SIZE must then be a multiple of its length).
	Share("bigresult", func() {
		stdin := bufio.NewReader(os.Stdin)
		size, _ := strconv.Atoi(os.Getenv("FAKE_SIZE"))
		for {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				return
			}
			if gjson.GetBytes(line, "type").Str != "user" {
				continue
			}
			w := bufio.NewWriterSize(os.Stdout, 1<<16)
			w.WriteString(`{"result":"`)
			chunk := []byte(strings.Repeat("y", 1<<16))
			if fill := os.Getenv("FAKE_FILL"); fill != "" {
				chunk = []byte(strings.Repeat(fill, 1<<16/len(fill)))
			}
			for left := size; left > 0; left -= len(chunk) {
				if left < len(chunk) {
					chunk = chunk[:left]
				}
				w.Write(chunk)
			}
			w.WriteString(`","nested":{"type":"not-this","session_id":"no"},"session_id":"sess-big","type":"result"}` + "\n")
			w.Flush()
		}
	})

	// echo: copies stdin to stdout unchanged.
	Share("echo", func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := os.Stdin.Read(buf)
			os.Stdout.Write(buf[:n])
			if err != nil {
				return
			}
		}
	})
}

// TranscriptOut is a CLI line of a transcript.
type TranscriptOut struct {
	Line  []byte
	After int // how many valid host lines precede it
}

// ReadTranscript splits a transcript into host lines (">> ") and CLI lines
// ("<< "), keeping the CLI lines' bytes exactly.
func ReadTranscript(path string) (in [][]byte, out []TranscriptOut) {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		switch {
		case bytes.HasPrefix(l, []byte(">> ")):
			if gjson.ValidBytes(l[3:]) {
				in = append(in, l[3:])
			}
		case bytes.HasPrefix(l, []byte("<< ")):
			out = append(out, TranscriptOut{Line: l[3:], After: len(in)})
		}
	}
	return in, out
}

func init() {
	// session: a small CLI for the dialect loops. It appends its argv to
	// FAKE_LOG (one line a start) and every stdin line after it. A user
	// message answers with init + text + result, unless its text holds
	// HANG (stream one delta, then ignore everything, interrupts too), DIE
	// (init, then exit 3 with a last word on stderr) or BIG (an assistant
	// line and a result line of 300 KiB each; HUGE: the same, with the
	// result's keys in the real CLI's order, "type" last). A control request gets a
	// success; initialize's carries session_state "idle". With
	// FAKE_SAVE=1 every prompt is saved in the session's file, where the
	// CLI keeps it, so that the session can be resumed.
	Share("session", func() {
		logf, _ := os.OpenFile(os.Getenv("FAKE_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		fmt.Fprintf(logf, "argv %s\n", strings.Join(os.Args[1:], " "))
		sid := "fake-session"
		for i, a := range os.Args {
			if (a == "--session-id" || a == "--resume") && i+1 < len(os.Args) {
				sid = os.Args[i+1]
			}
			if v, ok := strings.CutPrefix(a, "--session-id="); ok {
				sid = v
			}
			if v, ok := strings.CutPrefix(a, "--resume="); ok {
				sid = v
			}
		}
		stdin := bufio.NewReaderSize(os.Stdin, 1<<20)
		hung := false
		for {
			line, err := stdin.ReadBytes('\n')
			if err != nil {
				return
			}
			fmt.Fprintf(logf, "stdin %s", line)
			if hung {
				continue
			}
			switch gjson.GetBytes(line, "type").Str {
			case "user":
				text := gjson.GetBytes(line, "message.content.0.text").Str
				if os.Getenv("FAKE_SAVE") == "1" {
					SaveSession(sid, line)
				}
				fmt.Printf(`{"type":"system","subtype":"init","session_id":%q,"model":"m","cwd":"/"}`+"\n", sid)
				switch {
				case strings.Contains(text, "HANG"):
					fmt.Printf(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial "}},"session_id":%q,"parent_tool_use_id":null,"api_message_id":"msg_1"}`+"\n", sid)
					hung = true
				case strings.Contains(text, "NOISE"):
					// A stray print to stdout, then the turn goes on.
					fmt.Printf("Debugger attached.\n"+`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":%q,"total_cost_usd":0.1,"terminal_reason":"completed"}`+"\n", sid)
				case strings.Contains(text, "DIE"):
					fmt.Fprintln(os.Stderr, "fatal: the fake CLI fell over")
					os.Exit(3)
				case strings.Contains(text, "HUGE"):
					// As the real CLI writes them: a result line
					// begins with its numbers and ends with its type,
					// after the text.
					big := strings.Repeat("0123456789", 30<<10)
					fmt.Printf(`{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":%q}]},"session_id":%q,"parent_tool_use_id":null}`+"\n", big, sid)
					fmt.Printf(`{"duration_api_ms":38,"stop_reason":"end_turn","session_id":%q,"total_cost_usd":0.25,"usage":{"input_tokens":24,"output_tokens":40},"terminal_reason":"completed","is_error":false,"num_turns":1,"subtype":"success","result":%q,"type":"result","duration_ms":158}`+"\n", sid, big)
				case strings.Contains(text, "BIG"):
					big := strings.Repeat("0123456789", 30<<10)
					fmt.Printf(`{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":%q}]},"session_id":%q,"parent_tool_use_id":null}`+"\n", big, sid)
					fmt.Printf(`{"result":%q,"subtype":"success","is_error":false,"session_id":%q,"total_cost_usd":0.1,"terminal_reason":"completed","type":"result"}`+"\n", big, sid)
				default:
					fmt.Printf(`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":%q,"total_cost_usd":0.1,"terminal_reason":"completed"}`+"\n", sid)
				}
			case "control_request":
				resp := `{}`
				id := gjson.GetBytes(line, "request_id").Str
				switch gjson.GetBytes(line, "request.subtype").Str {
				case "initialize":
					resp = `{"session_state":"idle"}`
				case "file_suggestions":
					// As the CLI answers: paths that match, and its cwd.
					resp = fmt.Sprintf(`{"suggestions":[{"path":%q}],"cwd":"/"}`, gjson.GetBytes(line, "request.query").Str+"llo.txt")
				case "mcp_reconnect":
					// As the CLI refuses: a server that fails to connect
					// again ("broken"), any other unknown.
					msg := "Server not found: " + gjson.GetBytes(line, "request.serverName").Str
					if gjson.GetBytes(line, "request.serverName").Str == "broken" {
						msg = "ENOENT: no such file or directory, posix_spawn 'stdio'"
					}
					fmt.Printf(`{"type":"control_response","response":{"subtype":"error","request_id":%q,"error":%q}}`+"\n", id, msg)
					continue
				case "generate_session_title":
					resp = `{"title":"Fake model session"}`
				case "get_context_usage":
					if os.Getenv("FAKE_SILENT") == "1" {
						continue // a CLI that never answers
					}
				}
				fmt.Printf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":%s}}`+"\n",
					gjson.GetBytes(line, "request_id").Str, resp)
			}
		}
	})
}

// Share adds a mode that every package may use without the unused check.
func Share(name string, fn func()) {
	Register(name, fn)
	shared[name] = true
}
