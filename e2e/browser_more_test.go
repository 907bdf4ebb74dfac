package e2e

// More of the web UI in a browser (docs/protocol/web.md), in the manner of
// browser_test.go: a permission prompt withdrawn by an interrupt, the
// header's and the composer's controls (permission mode, model, costs and
// context use, image attachments, slash completion), and a session file
// resumed and forked from the list.

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/session/clifiles"
)

// webPNG is a valid 1x1 PNG.
const webPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

// jsv is v as a JavaScript value.
func jsv(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// shownID is the id of the web session the page shows (location.hash is
// #s=ID), "" for none.
func (w *webTab) shownID() string {
	w.t.Helper()
	return webEval[string](w, `decodeURIComponent((/^#s=(.+)$/.exec(location.hash) || [])[1] || '')`)
}

// webList returns GET /api/web/sessions.
func webList(t *testing.T, s *svServer) gjson.Result {
	t.Helper()
	origin := strings.TrimSuffix(s.base, svPath)
	code, _, b, err := svDo(s.client, http.MethodGet, origin+"/api/web/sessions", "", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /api/web/sessions: HTTP %d, %v: %.500s", code, err, b)
	}
	return gjson.ParseBytes(b)
}

// webOpen returns web session id's object in GET /api/web/sessions.
func webOpen(t *testing.T, s *svServer, id string) gjson.Result {
	t.Helper()
	for _, o := range webList(t, s).Get("open").Array() {
		if o.Get("id").Str == id {
			return o
		}
	}
	t.Fatalf("web session %s is not in GET /api/web/sessions", id)
	return gjson.Result{}
}

// webStreamWait reads web session id's stream from its first line until a
// line matches, and returns that line.
func webStreamWait(t *testing.T, s *svServer, id, what string, match func(gjson.Result) bool) gjson.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), webWait)
	defer cancel()
	origin := strings.TrimSuffix(s.base, svPath)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/api/web/sessions/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.sse.Do(req)
	if err != nil {
		t.Fatalf("GET the events of %s: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the events of %s: HTTP %d", id, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if line := gjson.Parse(data); match(line) {
				return line
			}
		}
	}
	t.Fatalf("no line in the stream of %s for %s within %v (%v)", id, what, webWait, sc.Err())
	return gjson.Result{}
}

// webPost posts an inbound ipc message to web session id, as another
// client of the session would.
func webPost(t *testing.T, s *svServer, id string, msg any) {
	t.Helper()
	origin := strings.TrimSuffix(s.base, svPath)
	code, _, b, err := svDo(s.client, http.MethodPost, origin+"/api/web/sessions/"+id+"/messages", "", strings.NewReader(jsv(msg)))
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("POST a message to %s: HTTP %d, %v: %.300s", id, code, err, b)
	}
}

// TestWebWithdrawnPrompt: WRITEFILE's permission prompt withdrawn by an
// interrupt, twice: once set aside with Escape (the chip #pending shows
// it: the modal dialog keeps #interrupt out of reach) and interrupted
// with #interrupt, once interrupted by another client while its dialog is
// open; then denied with the dialog's Deny and stop. Each time the dialog
// closes with no pending chip left, the turn ends cancelled and no file is
// written; the next prompt completes.
func TestWebWithdrawnPrompt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{}, false)
	id := w.shownID()
	noChip := `document.querySelector('#pending').hidden`
	withdrawn := func(n int) {
		t.Helper()
		w.waitFor("the permission dialog to close", `!document.querySelector('dialog#permission[open]')`)
		w.waitTurnEnd(n, "cancelled", false)
		w.waitFor("no pending chip", noChip)
		if _, err := os.Stat(filepath.Join(dir, "written.txt")); !os.IsNotExist(err) {
			t.Errorf("written.txt exists after the prompt was withdrawn (%v)", err)
		}
	}

	w.send("WRITEFILE")
	w.waitFor("the permission dialog", `!!document.querySelector('dialog#permission[open]')`)
	w.shot("withdrawn-dialog")
	// The dialog is modal: the rest of the page, #interrupt with it, is
	// inert until it closes.
	t.Logf("at the centre of #interrupt while the dialog is open: %s", webEval[string](w, `(() => {
		const r = document.querySelector('#interrupt').getBoundingClientRect();
		const e = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
		return e ? e.tagName + (e.id ? '#' + e.id : '') : 'nothing';
	})()`))
	w.do("pressing Escape", webWait, chromedp.KeyEvent(kb.Escape))
	w.waitFor("the dialog set aside, its chip shown", `!document.querySelector('dialog#permission[open]') && !`+noChip)
	w.shot("withdrawn-chip")
	w.click("#interrupt")
	withdrawn(1)
	w.shot("withdrawn-cancelled")
	// The next prompt completes. (The CLI sends it in one message with
	// the withdrawn Write's result, so the fake model answers it as the
	// WRITEFILE prompt's next step, "Done.", not with its fallback.)
	w.send("Say hello after the withdrawal")
	w.waitTurnEnd(2, "complete", false)

	w.send("WRITEFILE")
	w.waitFor("the permission dialog", `!!document.querySelector('dialog#permission[open]')`)
	webPost(t, w.s, id, map[string]string{"type": "interrupt"})
	withdrawn(3)
	w.send("Say hello after the second withdrawal")
	w.waitTurnEnd(4, "complete", false)

	// The dialog's own way to stop: Deny and stop ends the turn.
	w.send("WRITEFILE")
	w.waitFor("the permission dialog", `!!document.querySelector('dialog#permission[open]')`)
	w.click(`dialog#permission[open] button[data-action=deny-stop]`)
	withdrawn(5)
	w.send("Say hello after the stop")
	w.waitTurnEnd(6, "complete", false)
	if ends := w.turnEnds(); !slices.Equal(ends, []string{"cancelled", "complete", "cancelled", "complete", "cancelled", "complete"}) {
		t.Errorf("turn ends shown: %v, want [cancelled complete] three times", ends)
	}
	w.shot("withdrawn-after")
}

// setSelect sets the select sel to value as a user's choice does (input
// and change events) and returns the value it took.
func (w *webTab) setSelect(sel, value string) string {
	w.t.Helper()
	w.do("waiting for "+sel+" to be enabled", webWait, chromedp.WaitEnabled(chromedp.CSS(sel)))
	return webEval[string](w, `(() => {
		const el = document.querySelector(`+jsq(sel)+`);
		el.value = `+jsq(value)+`;
		el.dispatchEvent(new Event('input', {bubbles: true}));
		el.dispatchEvent(new Event('change', {bubbles: true}));
		return el.value;
	})()`)
}

// TestWebControls: in one session, with this test's own fake model: the
// costs and the context use after a turn; slash completion from "/co";
// #model set to claude-sonnet-4-5 (what the model then gets); the
// permission mode acceptEdits (WRITEFILE writes with no prompt); an image
// attached through #attach (the model gets one image block).
func TestWebControls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Files to @-mention, an MCP server that cannot start, and a session
	// file the user renamed (/rename writes custom-title).
	home := t.TempDir()
	mcp := filepath.Join(t.TempDir(), "mcp.json")
	titled := uuid.NewString()
	for name, data := range map[string]string{
		filepath.Join(dir, "hello.txt"):        "hi\n",
		filepath.Join(dir, "src", "helper.go"): "package src\n",
		mcp:                                    `{"mcpServers":{"broken":{"command":"/nonexistent/ccbridge-e2e-mcp"}}}`,
		filepath.Join(home, ".claude", "projects", clifiles.ProjectDirName(dir), titled+".jsonl"): `{"type":"user","cwd":` + jsq(dir) + `,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"an old prompt"}}` + "\n" +
			`{"type":"custom-title","customTitle":"Renamed by hand","sessionId":"` + titled + `"}` + "\n",
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := webSession(t, dir, svOpts{external: true, home: home, args: []string{"--", "--mcp-config", mcp}}, false)
	id := w.shownID()
	turns := 0

	// The session list shows the CLI's title of a file, not its prompt.
	w.waitFor("the renamed file's title in the list", `document.querySelector('.file-item[data-session-id="`+titled+`"] .title')?.textContent === 'Renamed by hand'`)

	// Slash completion before the first turn (the page's own list):
	// "/co" offers the commands starting with it, Tab completes the one
	// marked.
	slash := func(what string, want ...string) []string {
		t.Helper()
		w.do("typing /co", webWait, chromedp.SendKeys(chromedp.CSS("#prompt"), "/co"))
		w.waitFor("the slash menu", `!document.querySelector('#slash-menu').hidden && document.querySelectorAll('#slash-menu .slash-item').length > 0`)
		items := webEval[[]string](w, `[...document.querySelectorAll('#slash-menu .slash-item')].map(e => e.textContent)`)
		for _, it := range items {
			if !strings.HasPrefix(it, "/co") {
				t.Errorf("%s: the slash menu offers %q for /co", what, it)
			}
		}
		for _, c := range want {
			if !slices.Contains(items, c) {
				t.Errorf("%s: the slash menu for /co lacks %s: %q", what, c, items)
			}
		}
		return items
	}
	clearPrompt := func() {
		t.Helper()
		w.setPrompt("")
		w.waitFor("the slash menu to close", `document.querySelector('#slash-menu').hidden`)
	}
	slash("before the first turn", "/compact", "/context", "/cost")
	active := w.textOf("#slash-menu .slash-item.active")
	w.shot("controls-slash-menu")
	w.do("pressing Tab", webWait, chromedp.SendKeys(chromedp.CSS("#prompt"), kb.Tab))
	w.waitFor("the completed command in the prompt", `document.querySelector('#prompt').value === `+jsq(active+" ")+
		` && document.querySelector('#slash-menu').hidden`)
	clearPrompt()

	// Costs and context use, after a completed turn.
	w.send("Say hello")
	turns++
	w.waitTurnEnd(turns, "complete", false)
	w.waitFor("the costs and the context use in the header", `/^\$\d+\.\d+$/.test(document.querySelector('#cost-total').textContent) &&
		/^\$\d+\.\d+$/.test(document.querySelector('#cost-turn').textContent) &&
		/\d+.* tokens/.test(document.querySelector('#context-use').textContent)`)
	meters := webEval[string](w, `['#cost-turn', '#cost-total', '#context-use'].map(s => document.querySelector(s).textContent).join(' | ')`)
	if m := regexp.MustCompile(`(\d+)( / \d+)? tokens`).FindStringSubmatch(w.textOf("#context-use")); m == nil || m[1] == "0" {
		t.Errorf("#context-use shows %q, want a number of tokens above 0", w.textOf("#context-use"))
	}
	t.Logf("the header's meters: %s", meters)
	w.shot("controls-costs")
	// The CLI's own count of the context (get_context_usage), asked
	// after the turn.
	w.waitFor("the CLI's context usage in the header", `/^context \d+ \/ \d+ \(\d+(\.\d+)?%\)$/.test(document.querySelector('#context-usage').textContent)`)

	// @-mention completion from the CLI's file_suggestions; a click puts
	// the path in place of the text after "@".
	// Until the CLI has built its file index (in the background, from
	// the page's first question; a few seconds on a loaded machine) it
	// suggests the top level only: the mention is typed again until the
	// nested file is offered.
	var items []string
	for attempt := 0; ; attempt++ {
		w.do("typing an @-mention", webWait, chromedp.SendKeys(chromedp.CSS("#prompt"), "look at @hel"))
		w.waitFor("the file suggestions", `[...document.querySelectorAll('#slash-menu .mention-item')].some(e => e.dataset.path === 'hello.txt')`)
		items = webEval[[]string](w, `[...document.querySelectorAll('#slash-menu .mention-item')].map(e => e.textContent)`)
		if slices.Contains(items, "@src/helper.go") || attempt == 20 {
			break
		}
		clearPrompt()
		time.Sleep(500 * time.Millisecond)
	}
	if !slices.Contains(items, "@src/helper.go") {
		t.Errorf("the suggestions for @hel: %q, want @hello.txt and @src/helper.go", items)
	}
	w.shot("controls-mention")
	w.click(`#slash-menu .mention-item[data-path="hello.txt"]`)
	w.waitFor("the path in the prompt", `document.querySelector('#prompt').value === 'look at @hello.txt ' && document.querySelector('#slash-menu').hidden`)
	clearPrompt()

	// The MCP panel: the server that cannot start is failed, with the
	// CLI's error; Reconnect fails again and says why; Disable disables.
	w.click("#mcp-button")
	w.waitFor("the failed MCP server", `document.querySelector('.mcp-server[data-name="broken"]')?.dataset.status === 'failed' &&
		document.querySelector('.mcp-server[data-name="broken"] .mcp-error').textContent.includes('ENOENT') &&
		document.querySelector('#mcp-button').textContent === 'MCP (1 failed)'`)
	w.shot("controls-mcp-failed")
	w.click(`.mcp-server[data-name="broken"] .mcp-reconnect`)
	w.waitFor("the reconnect's error", `document.querySelector('#toast').textContent.startsWith('broken: ENOENT')`)
	w.click(`.mcp-server[data-name="broken"] .mcp-toggle`)
	w.waitFor("the server disabled", `document.querySelector('.mcp-server[data-name="broken"]')?.dataset.status === 'disabled' &&
		document.querySelector('.mcp-server[data-name="broken"] .mcp-toggle').textContent === 'Enable'`)
	w.shot("controls-mcp-disabled")
	w.click("#mcp-close")

	// Slash completion from the CLI's list, once it has sent it; a click
	// completes.
	items = slash("after the first turn", "/compact", "/context")
	t.Logf("the slash menu for /co after the first turn: %q", items)
	if i := slices.Index(items, "/context"); i >= 0 {
		w.click(`#slash-menu .slash-item:nth-child(` + strconv.Itoa(i+1) + `)`)
		w.waitFor("/context completed in the prompt", `document.querySelector('#prompt').value === '/context ' && document.querySelector('#slash-menu').hidden`)
	}
	clearPrompt()

	// The model, typed into #model and taken on Enter.
	const model = "claude-sonnet-4-5"
	w.do("focusing #model", webWait, chromedp.WaitEnabled(chromedp.CSS("#model")), chromedp.Focus(chromedp.CSS("#model")))
	// (while #model has the focus the page leaves its value alone)
	webEval[bool](w, `(document.querySelector('#model').value = '') === ''`)
	w.do("typing the model and Enter", webWait, chromedp.KeyEvent(model), chromedp.KeyEvent(kb.Enter))
	w.waitFor("the model change acknowledged", `[...document.querySelectorAll('#conversation .msg.assistant')].some(m => m.textContent.includes('Set model to') && m.textContent.includes(`+jsq(model)+`))`)
	prompt := "which model " + token("model")
	w.send(prompt)
	turns++
	w.waitTurnEnd(turns, "complete", false)
	var models []string
	for _, r := range fakeAPI(t).Requests() {
		if strings.Contains(r.Prompt, prompt) {
			models = append(models, r.Model)
		}
	}
	if len(models) == 0 || slices.ContainsFunc(models, func(m string) bool { return !strings.Contains(m, model) }) {
		t.Errorf("the models of the requests for %q: %q, want %s", prompt, models, model)
	}
	if got := webEval[string](w, `document.querySelector('#model').value`); !strings.Contains(got, model) {
		t.Errorf("#model shows %q after the change, want %s", got, model)
	}
	w.shot("controls-model")

	// The permission mode acceptEdits: WRITEFILE writes, no prompt.
	if got := w.setSelect("#permission-mode", "acceptEdits"); got != "acceptEdits" {
		w.fatalf("#permission-mode does not take acceptEdits (it has %q)", got)
	}
	webStreamWait(t, w.s, id, "the permission mode acceptEdits", func(l gjson.Result) bool {
		return l.Get("type").Str == "system_metadata" && l.Get("permissionMode").Str == "acceptEdits"
	})
	webEval[bool](w, `(() => {
		const d = document.querySelector('dialog#permission');
		window.__e2ePermissionOpened = d.open;
		new MutationObserver(() => { if (d.open) window.__e2ePermissionOpened = true; }).observe(d, {attributes: true});
		return true;
	})()`)
	w.send("WRITEFILE")
	turns++
	w.waitTurnEnd(turns, "complete", false)
	if webEval[bool](w, `window.__e2ePermissionOpened`) {
		t.Errorf("a permission dialog opened in the mode acceptEdits")
	}
	if data, err := os.ReadFile(filepath.Join(dir, "written.txt")); err != nil || string(data) != "hello world\n" {
		t.Errorf("written.txt: %q, %v; want %q", data, err, "hello world\n")
	}
	if got := webEval[string](w, `document.querySelector('#permission-mode').value`); got != "acceptEdits" {
		t.Errorf("#permission-mode shows %q after the turn, want acceptEdits", got)
	}
	w.shot("controls-accept-edits")

	// An image attached through #attach.
	png, err := base64.StdEncoding.DecodeString(webPNG)
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "dot.png")
	if err := os.WriteFile(img, png, 0o644); err != nil {
		t.Fatal(err)
	}
	w.do("attaching the image", webWait, chromedp.SetUploadFiles(chromedp.CSS("#attach"), []string{img}))
	w.waitFor("the attachment chip", `document.querySelectorAll('#attachments .attachment').length === 1`)
	w.shot("controls-attachment")
	w.send("IMAGECHECK what is this")
	turns++
	w.waitTurnEnd(turns, "complete", false)
	if got := w.lastAssistant(); !strings.Contains(got, "I received 1 image block(s)") {
		t.Errorf("the answer to IMAGECHECK is %q, want it to say it received 1 image block", got)
	}
	if n := w.count(".attachment"); n != 0 {
		t.Errorf("%d attachment chips left after the prompt was sent", n)
	}
	w.shot("controls-image")

	// Two images pasted into the prompt, as a clipboard holding image
	// files delivers them.
	webEval[bool](w, `(() => {
		const bytes = Uint8Array.from(atob(`+jsq(webPNG)+`), (c) => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], 'a.png', {type: 'image/png'}));
		dt.items.add(new File([bytes], 'b.png', {type: 'image/png'}));
		const p = document.querySelector('#prompt');
		p.focus();
		return p.dispatchEvent(new ClipboardEvent('paste', {clipboardData: dt, bubbles: true, cancelable: true}));
	})()`)
	w.waitFor("two attachment chips from the paste", `document.querySelectorAll('#attachments .attachment').length === 2`)
	w.send("IMAGECHECK pasted")
	turns++
	w.waitTurnEnd(turns, "complete", false)
	// The fake model counts every image of the request: the one picked
	// before is in the conversation too.
	if got := w.lastAssistant(); !strings.Contains(got, "I received 3 image block(s)") {
		t.Errorf("the answer to the pasted images is %q, want it to say it received 3 image blocks (1 picked before, 2 pasted)", got)
	}
}

// TestWebResumeHistory: a session ended with the page's End button; after
// a reload its file is in the list; Resume shows a session whose
// conversation begins with the file's prompt and answer, idle, and takes
// a new prompt; Fork shows one under another session id, with the same
// history.
func TestWebResumeHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{}, false)
	first := w.shownID()
	const remember = "remember HISTORYWORD"
	w.send(remember)
	w.waitTurnEnd(1, "complete", false)
	sid := webOpen(t, w.s, first).Get("session_id").Str
	if sid == "" {
		t.Fatalf("web session %s has no session id", first)
	}
	w.click("#end-session")
	w.waitFor("the session to end", `document.querySelector('#end-session').disabled && document.querySelector('#prompt').disabled`)
	if !webOpen(t, w.s, first).Get("ended").Bool() {
		t.Errorf("web session %s is not ended after End", first)
	}

	w.do("reloading the page", webWait, chromedp.Reload())
	w.waitLive()
	file := fmt.Sprintf(`.file-item[data-session-id=%s]`, jsq(sid))
	w.waitFor("the session file in the list", `!!document.querySelector(`+jsq(file)+`)`)
	w.shot("resume-list")

	// history checks that the shown session is not first nor any of not,
	// live and idle, and shows the file's prompt and answer.
	history := func(what string, not ...string) string {
		t.Helper()
		w.waitFor(what, fmt.Sprintf(`(() => {
			const id = decodeURIComponent((/^#s=(.+)$/.exec(location.hash) || [])[1] || '');
			return id && !%s.includes(id) && document.body.dataset.conn === 'live' &&
				[...document.querySelectorAll('#conversation .msg.user')].some(m => m.textContent.includes(%s));
		})()`, jsv(append([]string{first}, not...)), jsq(remember)))
		w.waitFor(what+": the earlier answer", `[...document.querySelectorAll('#conversation .msg.assistant')].some(m => m.textContent.includes(`+jsq(webFallbackText)+`))`)
		if turn := webEval[string](w, `document.querySelector('#conversation').dataset.turn`); turn != "idle" {
			t.Errorf("%s: #conversation[data-turn] is %q, want idle", what, turn)
		}
		if ends := w.turnEnds(); len(ends) != 0 {
			t.Errorf("%s: turn ends shown before any prompt: %v", what, ends)
		}
		return w.shownID()
	}

	w.click(file + " .resume")
	resumed := history("the resumed session")
	if got := webOpen(t, w.s, resumed).Get("session_id").Str; got != sid {
		t.Errorf("the resumed session's id is %q, want %s", got, sid)
	}
	w.shot("resume-history")
	again := "and now " + token("resumed")
	w.send(again)
	w.waitTurnEnd(1, "complete", false)
	w.waitFor("the turn to be idle", `document.querySelector('#conversation').dataset.turn === 'idle'`)
	answers := webEval[[]string](w, `[...document.querySelectorAll('#conversation .msg.assistant')].map(m => (m.querySelector('.md') || m).textContent)`)
	if len(answers) != 2 || !strings.Contains(answers[1], webFallbackText) {
		t.Errorf("the answers in the resumed session: %q, want the earlier one and %q", answers, webFallbackText)
	}
	w.shot("resume-answered")

	w.waitFor("the session file in the list", `!!document.querySelector(`+jsq(file)+`)`)
	w.click(file + " .fork")
	forked := history("the forked session", resumed)
	fsid := webOpen(t, w.s, forked).Get("session_id").Str
	if fsid == "" || fsid == sid {
		t.Errorf("the forked session's id is %q, want one other than %s", fsid, sid)
	}
	w.waitFor("the forked session's id on the page", `document.querySelector('#session-id').textContent.includes(`+jsq(fsid)+`)`)
	w.shot("resume-fork")
	t.Logf("session %s: resumed as web session %s, forked as %s (session %s)", sid, resumed, forked, fsid)
}

// TestWebDroppedConnection: the page's stream is cut mid-turn (every TCP
// connection to serve's port reset with `ss -K`, as a network that drops
// them would); the page reconnects on its own (EventSource, with
// Last-Event-ID) and the turn ends with every line once: the prompt, the
// whole answer, one turn end.
func TestWebDroppedConnection(t *testing.T) {
	t.Parallel()
	ss, err := exec.LookPath("ss")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ss (iproute2) is needed to cut the page's connection")
		}
		t.Skip("no ss (iproute2) to cut the page's connection")
	}
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{}, false)
	// The page reports the cut stream as an error of its own.
	w.expect("ERR_")
	webEval[bool](w, `(() => {
		window.__e2eConns = [];
		new MutationObserver(() => window.__e2eConns.push(document.body.dataset.conn))
			.observe(document.body, {attributes: true, attributeFilter: ['data-conn']});
		return true;
	})()`)
	w.send("SLOW")
	w.waitFor("the SLOW answer, partial", partialJS(0))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(w.origin, "http://"))
	out, err := exec.Command(ss, "-K", "dst", "127.0.0.1", "dport", "=", port).CombinedOutput()
	w.waitFor("the page to notice the cut and reconnect", `window.__e2eConns.includes('reconnecting') && document.body.dataset.conn === 'live'`)
	if ends := w.turnEnds(); len(ends) != 0 {
		t.Errorf("the SLOW turn had ended (%v) by the time the page was live again: the cut did not land mid-turn", ends)
	}
	t.Logf("ss -K: %v %s; data-conn went %v", err, strings.TrimSpace(string(out)), webEval[[]string](w, `window.__e2eConns`))
	w.waitTurnEnd(1, "complete", false)
	w.shot("dropped-after")
	users := webEval[[]string](w, `[...document.querySelectorAll('#conversation .msg.user')].map(e => e.textContent)`)
	if len(users) != 1 || !strings.Contains(users[0], "SLOW") {
		t.Errorf("user messages after the cut: %q, want the prompt SLOW once", users)
	}
	answers := webEval[[]string](w, `[...document.querySelectorAll('#conversation .msg.assistant')].map(m => (m.querySelector('.md') || m).textContent)`)
	if full := strings.TrimSpace(svSlow); len(answers) != 1 || strings.TrimSpace(answers[0]) != full {
		t.Errorf("assistant messages after the cut: %q, want once %q", answers, full)
	}
	if ends := w.turnEnds(); len(ends) != 1 {
		t.Errorf("turn ends after the cut: %v, want one", ends)
	}
	// The page applied every line of the stream: after its last seq the
	// server has nothing more (read for a second). The page asks the
	// CLI's context count at the turn's end; its answer is the stream's
	// last line.
	w.waitFor("the context count after the turn", `document.querySelector('#context-usage').textContent !== ''`)
	seq := webEval[string](w, `document.querySelector('#conversation').dataset.seq`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.origin+"/api/web/sessions/"+w.shownID()+"/events?after="+seq, nil)
	resp, err := w.s.sse.Do(req)
	if err != nil {
		t.Fatalf("GET the events after %s: %v", seq, err)
	}
	defer resp.Body.Close()
	var more []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			more = append(more, data)
		}
	}
	if resp.StatusCode != http.StatusOK || len(more) != 0 {
		t.Errorf("after the page's last seq %s the server has %d more lines (HTTP %d): %.300q", seq, len(more), resp.StatusCode, more)
	}
}
