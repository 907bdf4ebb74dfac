package e2e

// Rewind end to end, against the real CLI and the fake model, in each
// dialect: two turns, the second writing written.txt (WRITEFILE); a dry
// run lists the file and changes nothing; a rewind of one turn with
// files removes the file, the model's next request no longer holds the
// dropped turn, and the history no longer lists it.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session/clifiles"
)

// rewindFilePrompts are the prompts of the session file's conversation as
// every history reads it (clifiles.Lines).
func rewindFilePrompts(t *testing.T, path string) []string {
	t.Helper()
	var p mapping.Prompts
	if err := clifiles.Lines(context.Background(), path, p.Line); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	var texts []string
	for _, q := range p.List() {
		texts = append(texts, q.Text)
	}
	return texts
}

// rewindFileGone reports whether the file the WRITEFILE turn wrote in dir
// is absent.
func rewindFileGone(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "written.txt"))
	return os.IsNotExist(err)
}

// TestRewindLane004: thread/rollback on the control worker's stdio.
func TestRewindLane004(t *testing.T) {
	t.Parallel()
	w := l4Start(t, ctlOpts{socket: true, args: []string{"--permission-mode", "acceptEdits"}})
	c, d := l4Stdio(w), l4Dial(t, w)
	th := w.sid
	tokA, tokB, tokC := token("KEEP"), token("DROP"), token("NEXT")
	turnA, _, _ := c.turn(th, "hello "+tokA)
	c.turn(th, "WRITEFILE "+tokB)
	if rewindFileGone(w.b.dir) {
		t.Fatal("the WRITEFILE turn wrote no written.txt")
	}

	// A rollback of more turns than there are, and a bad param: typed
	// errors, nothing changes.
	l4Fail(t, "rollback of 3", c.call(ctlID("rb"), "thread/rollback", map[string]any{"threadId": th, "numTurns": 3}), "thread/rollback", "invalid_request")
	l4Fail(t, "rollback of 0", c.call(ctlID("rb"), "thread/rollback", map[string]any{"threadId": th, "numTurns": 0}), "thread/rollback", "invalid_request")

	dry := l4OK(t, "dry run", c.call(ctlID("rb"), "thread/rollback", map[string]any{"threadId": th, "numTurns": 1, "revertFiles": true, "dryRun": true}), "thread/rollback")
	want := filepath.Join(mustReal(t, w.b.dir), "written.txt")
	if files := dry.Get("rollback.files").Array(); len(files) != 1 || files[0].Str != want || !dry.Get("rollback.dryRun").Bool() ||
		dry.Get("rollback.numTurns").Int() != 1 || dry.Get("thread.turns.#").Int() != 2 {
		t.Errorf("dry run: %s (want the file %s, two turns still)", dry.Raw, want)
	}
	if rewindFileGone(w.b.dir) {
		t.Fatal("the dry run removed written.txt")
	}

	// A turn/start from another peer while the rollback runs is a
	// conflict (one peer's requests are carried out one after the other).
	// It is sent once the file is restored: the rollback then still cuts
	// the conversation and waits (about 100 ms) for the CLI's record of it.
	rbID, tsID := ctlID("rb"), ctlID("turn")
	from, dFrom := len(c.got), len(d.got)
	c.send(l4Req(rbID, "thread/rollback", map[string]any{"threadId": th, "numTurns": 1, "revertFiles": true}))
	for deadline := time.Now().Add(ctlWait); !rewindFileGone(w.b.dir); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the rollback did not restore written.txt")
		}
	}
	d.send(l4Req(tsID, "turn/start", l4Text(th, "too soon")))
	l4Fail(t, "turn/start during the rollback", d.got[d.waitFrom(dFrom, "the receipt of "+tsID, l4IsReceipt(tsID))], "turn/start", "conflict")
	rb := l4OK(t, "rollback", c.got[c.waitFrom(from, "the receipt of "+rbID, l4IsReceipt(rbID))], "thread/rollback")
	users, _ := l4Turns(rb)
	if !slices.Equal(users, []string{"hello " + tokA}) || rb.Get("thread.turns.0.id").Str != turnA || rb.Get("rollback.dryRun").Bool() ||
		rb.Get("rollback.prompt").Str != "WRITEFILE "+tokB {
		t.Errorf("rollback: users %q: %s", users, rb.Raw)
	}
	if !rewindFileGone(w.b.dir) {
		t.Error("the rollback left written.txt")
	}
	read := l4OK(t, "thread/read", c.call(ctlID("read"), "thread/read", map[string]any{"threadId": th, "includeTurns": true}), "thread/read")
	if users, _ := l4Turns(read); !slices.Equal(users, []string{"hello " + tokA}) || read.Get("thread.preview").Str != "hello "+tokA {
		t.Errorf("thread/read after the rollback: users %q, %s", users, read.Raw)
	}

	c.turn(th, "go on "+tokC)
	if seenByModel(t, tokC, tokB) || !seenByModel(t, tokC, tokA) {
		t.Errorf("the model's next request: holds the dropped turn %v, the kept one %v", seenByModel(t, tokC, tokB), seenByModel(t, tokC, tokA))
	}
	read = l4OK(t, "thread/read", c.call(ctlID("read"), "thread/read", map[string]any{"threadId": th, "includeTurns": true}), "thread/read")
	if users, _ := l4Turns(read); !slices.Equal(users, []string{"hello " + tokA, "go on " + tokC}) {
		t.Errorf("thread/read after the next turn: users %q", users)
	}
}

// TestRewindIPC: the rewind message of --ui ipc (capability "rewind" in
// session_init): errors first (a rewind during a turn, too many turns),
// then a dry run and a rewind with files.
func TestRewindIPC(t *testing.T) {
	t.Parallel()
	b := startBridge(t, []string{"--ui", "ipc"})
	l, err := recv(t, b, ipcWait)
	if err != nil || typeOf(l) != "session_init" || !get(l, `capabilities.#(=="rewind")`).Exists() {
		t.Fatalf("session_init with the rewind capability: %.300s, %v", l, err)
	}
	sid := get(l, "session_id").Str
	tokA, tokB, tokC := token("KEEP"), token("DROP"), token("NEXT")
	turn(t, b, "hello "+tokA)
	turnAnswering(t, b, "WRITEFILE "+tokB, allowAll)
	if rewindFileGone(b.dir) {
		t.Fatal("the WRITEFILE turn wrote no written.txt")
	}
	b.send(`{"type":"rewind","turns":5}`)
	if e := expectError(t, b, "rewind_not_found", ""); get(e, "recoverable").Type != gjson.True {
		t.Errorf("too many turns: %s", e)
	}
	b.send(`{"type":"rewind","turns":1,"files":true,"dry_run":true}`)
	dry := ipcUntil(t, b, "the dry run's rewind_result", func(l []byte) bool { return typeOf(l) == "rewind_result" })
	d := dry[len(dry)-1]
	want := filepath.Join(mustReal(t, b.dir), "written.txt")
	if !get(d, "dry_run").Bool() || get(d, "files.0").Str != want || get(d, "files.#").Int() != 1 || get(d, "prompt").Str != "WRITEFILE "+tokB || get(d, "turns").Int() != 1 {
		t.Errorf("dry run: %s", d)
	}
	if rewindFileGone(b.dir) {
		t.Fatal("the dry run removed written.txt")
	}
	// A prompt sent while the rewind runs is refused, not echoed.
	b.send(`{"type":"rewind","turns":1,"files":true}`)
	b.send(userMessage("too soon"))
	res := ipcUntil(t, b, "the rewind_result", func(l []byte) bool { return typeOf(l) == "rewind_result" })
	if e := first(res, func(l []byte) bool { return typeOf(l) == "error" }); get(e, "code").Str != "rewind_busy" {
		t.Errorf("a prompt during the rewind: %s", e)
	}
	r := res[len(res)-1]
	if get(r, "dry_run").Bool() || get(r, "files.0").Str != want || get(r, "kept").Int() != 1 {
		t.Errorf("rewind: %s", r)
	}
	if !rewindFileGone(b.dir) {
		t.Error("the rewind left written.txt")
	}
	file := sessionFile(t, b.home, b.dir, sid)
	if got := rewindFilePrompts(t, file); !slices.Equal(got, []string{"hello " + tokA}) {
		t.Errorf("the session's prompts after the rewind: %q", got)
	}
	// During a turn: refused, the turn goes on.
	b.send(userMessage("go on " + tokC))
	b.send(`{"type":"rewind","turns":1}`)
	lines := finishTurn(t, b, nil)
	if e := first(lines, func(l []byte) bool { return typeOf(l) == "error" }); get(e, "code").Str != "rewind_busy" {
		t.Errorf("a rewind during a turn: %s", e)
	}
	if seenByModel(t, tokC, tokB) || !seenByModel(t, tokC, tokA) {
		t.Errorf("the model's next request: holds the dropped turn %v, the kept one %v", seenByModel(t, tokC, tokB), seenByModel(t, tokC, tokA))
	}
	if got := rewindFilePrompts(t, file); !slices.Equal(got, []string{"hello " + tokA, "go on " + tokC}) {
		t.Errorf("the session's prompts after the next turn: %q", got)
	}
}

// TestRewindRPC: session.rewind (supports_session_rewind); the history
// (session.history) and the list (session.list's message_count) leave
// the dropped turn out.
func TestRewindRPC(t *testing.T) {
	t.Parallel()
	c := startRPC(t, []string{"--permission-mode", "acceptEdits"})
	init := c.initialize("")
	if !init.Get("server_capabilities.supports_session_rewind").Bool() {
		t.Errorf("initialize does not say supports_session_rewind: %s", init.Raw)
	}
	sid := init.Get("runtime.session_id").Str
	tokA, tokB, tokC := token("KEEP"), token("DROP"), token("NEXT")
	if _, _, status := c.runText("hello " + tokA); status != rpc.StatusCompleted {
		t.Fatalf("first run: %s", status)
	}
	if _, _, status := c.runText("WRITEFILE " + tokB); status != rpc.StatusCompleted {
		t.Fatalf("second run: %s", status)
	}
	if rewindFileGone(c.b.dir) {
		t.Fatal("the WRITEFILE run wrote no written.txt")
	}
	c.rpcError(c.call("session.rewind", `{"turns":3}`), rpc.CodeInvalidParams)
	c.rpcError(c.call("session.rewind", `{}`), rpc.CodeInvalidParams)
	want := filepath.Join(mustReal(t, c.b.dir), "written.txt")
	dry := c.result(c.call("session.rewind", `{"turns":1,"files":true,"dry_run":true}`))
	if !dry.Get("dry_run").Bool() || dry.Get("files.0").Str != want || dry.Get("prompt").Str != "WRITEFILE "+tokB || rewindFileGone(c.b.dir) {
		t.Errorf("dry run: %s", dry.Raw)
	}
	res := c.result(c.call("session.rewind", `{"turns":1,"files":true,"session_id":"`+sid+`"}`))
	if res.Get("dry_run").Bool() || res.Get("files.0").Str != want || res.Get("kept").Int() != 1 || !rewindFileGone(c.b.dir) {
		t.Errorf("rewind: %s (file gone: %v)", res.Raw, rewindFileGone(c.b.dir))
	}
	hid := c.call("session.history", `{"session_id":"`+sid+`"}`)
	lines := c.until("session.history's answer", isReply(hid))
	var prompts []string
	for _, e := range lines[:len(lines)-1] {
		if gjson.GetBytes(e, "params.event.type").Str == "hidden_user_message" {
			prompts = append(prompts, gjson.GetBytes(e, "params.event.content").Str)
		}
	}
	if !slices.Equal(prompts, []string{"hello " + tokA}) {
		t.Errorf("session.history's prompts after the rewind: %q", prompts)
	}
	list := c.result(c.call("session.list", `{}`)).Get("sessions")
	if s := list.Get(`#(session_id=="` + sid + `")`); s.Get("message_count").Int() != 2 || s.Get("last_user_message").Str != "hello "+tokA {
		t.Errorf("session.list after the rewind: %s", list.Raw)
	}
	if _, _, status := c.runText("go on " + tokC); status != rpc.StatusCompleted {
		t.Fatalf("third run: %s", status)
	}
	if seenByModel(t, tokC, tokB) || !seenByModel(t, tokC, tokA) {
		t.Errorf("the model's next request: holds the dropped turn %v, the kept one %v", seenByModel(t, tokC, tokB), seenByModel(t, tokC, tokA))
	}
	c.close()
}

// TestRewindACP: _session/rewind and _session/rewind_points through the
// official ACP client library; session/load's replay leaves the dropped
// turn out.
func TestRewindACP(t *testing.T) {
	t.Parallel()
	tokA, tokB, tokC := token("KEEP"), token("DROP"), token("NEXT")
	r := runACPScript(t, clientScript("acp_client.mjs"), t.TempDir(), t.TempDir(), 90*time.Second,
		"SCENARIO=rewind", "TOK_A="+tokA, "TOK_B="+tokB, "TOK_C="+tokC)
	if init := r.response("initialize", 0).Get("result"); !init.Get("agentCapabilities._meta.ccbridge.rewind").Bool() {
		t.Errorf("initialize does not say rewind: %s", init.Raw)
	}
	var files []bool
	for _, e := range r.filter(func(e gjson.Result) bool { return e.Get("event").Str == "file" }) {
		files = append(files, e.Get("exists").Bool())
	}
	if !slices.Equal(files, []bool{true, true, false}) {
		t.Errorf("written.txt after the turn, the dry run, the rewind: %v, want [true true false]", files)
	}
	var texts []string
	for _, p := range r.response("_session/rewind_points", 0).Get("result.points").Array() {
		texts = append(texts, p.Get("text").Str)
	}
	if !slices.Equal(texts, []string{"hello " + tokA, "WRITEFILE " + tokB}) {
		t.Errorf("rewind points before: %q", texts)
	}
	if e := r.response("_session/rewind", 0).Get("error"); e.Get("code").Int() != -32602 || e.Get("data.reason").Str != "not_found" {
		t.Errorf("three turns back: %s", e.Raw)
	}
	if e := r.response("_session/rewind", 1).Get("error"); e.Get("code").Int() != -32602 {
		t.Errorf("no messageId nor numTurns: %s", e.Raw)
	}
	want := filepath.Join(mustReal(t, r.workdir), "written.txt")
	dry := r.response("_session/rewind", 2).Get("result")
	if dry.Get("files.filesChanged.0").Str != want || dry.Get("conversation.rewound").Bool() || dry.Get("conversation.messagesDropped").Int() != 1 || !dry.Get("_meta.ccbridge.dryRun").Bool() {
		t.Errorf("dry run: %s", dry.Raw)
	}
	res := r.response("_session/rewind", 3).Get("result")
	if res.Get("files.filesChanged.0").Str != want || !res.Get("conversation.rewound").Bool() || res.Get("_meta.ccbridge.prompt").Str != "WRITEFILE "+tokB {
		t.Errorf("rewind: %s", res.Raw)
	}
	if pts := r.response("_session/rewind_points", 1).Get("result.points"); pts.Get("#").Int() != 1 || pts.Get("0.text").Str != "hello "+tokA {
		t.Errorf("rewind points after: %s", pts.Raw)
	}
	if seenByModel(t, tokC, tokB) || !seenByModel(t, tokC, tokA) {
		t.Errorf("the model's next request: holds the dropped turn %v, the kept one %v", seenByModel(t, tokC, tokB), seenByModel(t, tokC, tokA))
	}
	var users []string
	for _, e := range r.filter(func(e gjson.Result) bool {
		return e.Get("event").Str == "update" && e.Get("conn").Str == "b" && e.Get("update.sessionUpdate").Str == "user_message_chunk"
	}) {
		users = append(users, e.Get("update.content.text").Str)
	}
	if !slices.Equal(users, []string{"hello " + tokA, "go on " + tokC}) {
		t.Errorf("session/load replayed the prompts %q", users)
	}
}

// TestWebRewind: the web UI's rewind button on a prompt asks for the dry
// run, whose panel lists the file the rewind restores; Rewind drops the
// prompt and what followed from the page, restores the file, puts the
// prompt back in the composer; the model's next request and a reloaded
// page leave the dropped turn out.
func TestWebRewind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{external: true}, false)
	tokA, tokB, tokC := token("KEEP"), token("DROP"), token("NEXT")
	w.send("hello " + tokA)
	w.waitTurnEnd(1, "complete", false)
	w.send("WRITEFILE " + tokB)
	w.waitTurnEnd(2, "complete", true)
	if rewindFileGone(dir) {
		t.Fatal("the WRITEFILE turn wrote no written.txt")
	}
	webEval[bool](w, `(document.querySelectorAll('#conversation .msg.user')[1].querySelector('button.rewind').click(), true)`)
	w.waitFor("the rewind's dry run", `!!document.querySelector('#conversation .rewind-confirm')`)
	w.shot("rewind-dry-run")
	want := filepath.Join(mustReal(t, dir), "written.txt")
	if files := webEval[[]string](w, `[...document.querySelectorAll('.rewind-confirm .rewind-files li')].map(e => e.textContent)`); !slices.Equal(files, []string{want}) {
		t.Errorf("the dry run lists %q, want %q", files, want)
	}
	if rewindFileGone(dir) {
		t.Fatal("the dry run removed written.txt")
	}
	w.click(".rewind-confirm .rewind-go")
	w.waitFor("the conversation rewound", `document.querySelectorAll('#conversation .msg.user').length === 1 && !!document.querySelector('#conversation .note.rewound')`)
	if !rewindFileGone(dir) {
		t.Error("the rewind left written.txt")
	}
	if got := webEval[string](w, `document.querySelector('#prompt').value`); got != "WRITEFILE "+tokB {
		t.Errorf("the composer holds %q, want the dropped prompt", got)
	}
	if n := w.count("#conversation .turn-end"); n != 1 {
		t.Errorf("%d turn ends after the rewind, want 1", n)
	}
	webEval[bool](w, `(document.querySelector('#prompt').value = '', true)`)
	w.send("go on " + tokC)
	w.waitTurnEnd(2, "complete", false)
	if seenByModel(t, tokC, tokB) || !seenByModel(t, tokC, tokA) {
		t.Errorf("the model's next request: holds the dropped turn %v, the kept one %v", seenByModel(t, tokC, tokB), seenByModel(t, tokC, tokA))
	}
	w.do("reloading the page", webWait, chromedp.Reload())
	w.waitLive()
	w.waitTurnEnd(2, "complete", false)
	users := webEval[[]string](w, `[...document.querySelectorAll('#conversation .msg.user')].map(e => e.textContent)`)
	if !slices.Equal(users, []string{"hello " + tokA, "go on " + tokC}) {
		t.Errorf("the prompts after a reload: %q", users)
	}
	if w.count("#conversation .rewind-confirm") != 0 {
		t.Error("a reload opened the dry run's panel again")
	}
}
