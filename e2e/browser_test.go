package e2e

// The web UI in a browser (docs/protocol/web.md): `ccbridge serve --dir DIR
// --fake-model default` serves the page at /, each test drives it in a tab
// of the shared headless Chromium (browser_harness_test.go), the real CLI
// runs each web session against the fake model (scenario default,
// docs/fake-model.md). The page is found only by the selectors of
// "Hooks for tests". Screenshots of each state go to
// .ci/artifacts/screenshots (or $CCBRIDGE_ARTIFACTS/screenshots).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
)

// webFallbackText is the fake model's answer to a prompt no rule matches.
const webFallbackText = "Hello from the mock model."

// startFromForm starts a session in dir through the page's new-session
// form (mode new) and waits until the page shows it, connected.
func (w *webTab) startFromForm(dir string) {
	w.t.Helper()
	w.waitFor("the new-session control", `!!document.querySelector('#new-session')`)
	// #new-session opens the form when it is a control; when it is the
	// form itself there is nothing to open.
	switch tag := webEval[string](w, `document.querySelector('#new-session').tagName`); tag {
	case "BUTTON", "A", "SUMMARY", "INPUT":
		w.click("#new-session")
	}
	w.do("showing the new-session form", webWait, chromedp.WaitVisible(chromedp.CSS("#new-mode")))
	got := webEval[string](w, `(() => {
		const set = (el, v) => {
			el.value = v;
			el.dispatchEvent(new Event('input', {bubbles: true}));
			el.dispatchEvent(new Event('change', {bubbles: true}));
			return el.value;
		};
		const mode = set(document.querySelector('#new-mode'), 'new');
		const d = document.querySelector('#new-dir');
		let dir = null;
		if (d) dir = d.value === `+jsq(dir)+` ? d.value : set(d, `+jsq(dir)+`);
		return JSON.stringify({mode, dir});
	})()`)
	if m := gjson.Get(got, "mode").Str; m != "new" {
		w.fatalf("#new-mode does not take the value new (it has %q)", m)
	}
	if d := gjson.Get(got, "dir"); d.Type != gjson.Null && d.Str != dir {
		w.fatalf("#new-dir does not take the folder %s (it has %q)", dir, d.Str)
	}
	before := w.count(".session-item[data-id]")
	w.click("#new-start")
	w.waitFor("the new session in the list", fmt.Sprintf(`document.querySelectorAll('.session-item[data-id]').length > %d`, before))
	w.waitLive()
	w.waitFor("the composer", `!!document.querySelector('#prompt')`)
}

// partialJS is true once the (n+1)-th assistant message shows some of the
// SLOW prompt's answer but not all of it, and no (n+1)-th turn end is
// there: text seen while it streams.
func partialJS(n int) string {
	return fmt.Sprintf(`(() => {
		const ms = document.querySelectorAll('#conversation .msg.assistant');
		if (ms.length <= %d || document.querySelectorAll('#conversation .turn-end').length > %d) return false;
		const m = ms[ms.length - 1];
		const s = (m.querySelector('.md') || m).textContent.trim();
		return s.includes('counting') && s.length < %d;
	})()`, n, n, len(strings.TrimSpace(svSlow)))
}

// TestWebTextStreams (a): a session started with the page's form; a plain
// prompt is answered (text and thinking shown, the turn ends complete);
// the SLOW prompt's text is seen while it streams, partial, then whole.
func TestWebTextStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := svStart(t, svOpts{args: []string{"--dir", dir}})
	w := newTab(t, s, false)
	w.open("/", false)
	w.shot("start")
	w.startFromForm(dir)

	w.send("Say hello")
	w.waitTurnEnd(1, "complete", false)
	if got := w.lastAssistant(); !strings.Contains(got, webFallbackText) {
		t.Errorf("the assistant message is %q, want it to hold %q", got, webFallbackText)
	}
	if got := w.textOf("#conversation .msg.thinking"); !strings.Contains(got, "Let me think.") {
		t.Errorf("the thinking shown is %q, want it to hold %q", got, "Let me think.")
	}
	w.shot("text-complete")

	w.send("SLOW")
	w.waitFor("the SLOW answer, partial", partialJS(1))
	partial := strings.TrimSpace(w.lastAssistant())
	w.shot("text-streaming")
	w.waitTurnEnd(2, "complete", false)
	full := strings.TrimSpace(svSlow)
	if got := strings.TrimSpace(w.lastAssistant()); got != full {
		t.Errorf("the SLOW answer shown at the end is %q, want %q", got, full)
	}
	if ends := w.turnEnds(); len(ends) != 2 {
		t.Errorf("turn ends shown: %v, want 2", ends)
	}
	t.Logf("seen while streaming: %d of %d characters", len(partial), len(full))
}

// TestWebPermissionAllow (b): WRITEFILE's permission prompt opens as
// dialog#permission, on a second page of the session too; Allow on the
// first closes both, writes the file and the turn completes, with the
// created file shown as a diff; a reload does not ask again. The page
// shows ccbridge's version. All of it over HTTP, and over HTTPS (serve
// with --tls-cert and --tls-key; the browser trusts that certificate's
// key alone).
func TestWebPermissionAllow(t *testing.T) {
	t.Parallel()
	for _, https := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[https], func(t *testing.T) {
			t.Parallel()
			testWebPermissionAllow(t, https)
		})
	}
}

func testWebPermissionAllow(t *testing.T, https bool) {
	dir := t.TempDir()
	shot := func(w *webTab, name string) {
		if https {
			name += "-https"
		}
		w.shot(name)
	}
	w := webSession(t, dir, svOpts{tls: https}, false)
	webWantTLS(w, https)
	webCheckVersion(w)
	w.send("WRITEFILE")
	w.waitFor("the permission dialog", `!!document.querySelector('dialog#permission[open]')`)
	w.do("the Allow button", webWait, chromedp.WaitVisible(chromedp.CSS(`dialog#permission[open] button[data-action=allow]`)))
	if text := w.textOf("dialog#permission[open]"); !strings.Contains(text, "Write") {
		t.Errorf("the permission dialog does not name the tool Write: %q", text)
	}
	shot(w, "permission-dialog")
	// A second page on the same session shows the prompt too; the answer
	// given on the first closes it there.
	other := newTab(t, w.s, false)
	other.open("/#s="+w.shownID(), true)
	other.waitFor("the permission dialog on the second page", `!!document.querySelector('dialog#permission[open]')`)
	w.click(`dialog#permission[open] button[data-action=allow]`)
	w.waitFor("the permission dialog to close", `!document.querySelector('dialog#permission[open]')`)
	other.waitFor("the second page's dialog to close", `!document.querySelector('dialog#permission[open]') && document.querySelector('#pending').hidden`)
	w.waitTurnEnd(1, "complete", false)
	// A reload replays the prompt and its answer: nothing is asked again.
	w.do("reloading the page", webWait, chromedp.Reload())
	w.waitLive()
	w.waitTurnEnd(1, "complete", false)
	if w.count(`dialog#permission[open]`) != 0 || !webEval[bool](w, `document.querySelector('#pending').hidden`) {
		t.Errorf("after a reload the page asks again for a prompt answered before it")
	}
	if data, err := os.ReadFile(filepath.Join(dir, "written.txt")); err != nil || string(data) != "hello world\n" {
		t.Errorf("written.txt: %q, %v; want %q", data, err, "hello world\n")
	}
	if n := w.count(`#conversation .tool[data-tool-name="Write"]`); n != 1 {
		t.Errorf("%d Write tool calls shown, want 1", n)
	}
	if got := w.textOf(`#conversation .diff .diff-add`); !strings.Contains(got, "hello world") {
		t.Errorf("the Write's diff adds %q, want the line hello world", got)
	}
	shot(w, "permission-allowed")
}

// TestWebPermissionDenyReason (c): Deny with a reason typed in
// #deny-reason: no file, the reason is in the Write's result on the page
// and in what the model got next (this test's own fake model).
func TestWebPermissionDenyReason(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{external: true}, false)
	reason := token("notallowed")
	w.send("WRITEFILE")
	w.waitFor("the permission dialog", `!!document.querySelector('dialog#permission[open]')`)
	w.do("typing the reason", webWait,
		chromedp.WaitVisible(chromedp.CSS("#deny-reason")),
		chromedp.SendKeys(chromedp.CSS("#deny-reason"), "not in this test "+reason))
	w.shot("permission-deny")
	w.click(`dialog#permission[open] button[data-action=deny]`)
	w.waitFor("the permission dialog to close", `!document.querySelector('dialog#permission[open]')`)
	w.waitTurnEnd(1, "complete", false)
	if _, err := os.Stat(filepath.Join(dir, "written.txt")); !os.IsNotExist(err) {
		t.Errorf("written.txt exists after a deny (%v)", err)
	}
	w.waitFor("the reason in the Write's result", `[...document.querySelectorAll('#conversation .tool[data-tool-name="Write"] .tool-result')].some(r => r.textContent.includes(`+jsq(reason)+`))`)
	seen := false
	for _, r := range fakeAPI(t).Requests() {
		seen = seen || strings.Contains(string(r.Body), reason)
	}
	if !seen {
		t.Errorf("the fake model never got the deny reason %q", reason)
	}
	w.shot("permission-denied")
}

// pick checks the option label of the open question form (a radio button
// or a check box, chosen by its value or its label's text) with a click.
func (w *webTab) pick(label string) {
	w.t.Helper()
	found := webEval[string](w, `(() => {
		const want = `+jsq(label)+`;
		for (const el of document.querySelectorAll('[data-e2e-pick]')) el.removeAttribute('data-e2e-pick');
		const inputs = document.querySelectorAll('dialog#question[open] fieldset[data-question] input[type=radio], dialog#question[open] fieldset[data-question] input[type=checkbox]');
		for (const i of inputs) {
			const labels = [...(i.labels || [])];
			if (i.value === want || labels.some(l => l.textContent.trim().startsWith(want))) {
				i.setAttribute('data-e2e-pick', want);
				const target = (i.offsetParent === null && labels.length) ? labels[0] : i;
				target.setAttribute('data-e2e-click', want);
				return target.tagName;
			}
		}
		return '';
	})()`)
	if found == "" {
		w.fatalf("the question form has no option %q", label)
	}
	w.click(`dialog#question[open] [data-e2e-click=` + jsq(label) + `]`)
	if !webEval[bool](w, `document.querySelector('[data-e2e-pick=`+jsq(label)+`]').checked`) {
		w.fatalf("the option %q is not checked after a click on it", label)
	}
}

// TestWebQuestion (d): AskUserQuestion as a form: a single choice (Blue)
// and then a multiple one (Cheese and Olives), submitted; each turn
// completes and the tool's result on the page holds the answers.
func TestWebQuestion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{}, false)

	w.send("ASKUSER")
	w.waitFor("the question form", `!!document.querySelector('dialog#question[open] fieldset[data-question]')`)
	if text := w.textOf("dialog#question[open]"); !strings.Contains(text, "Which color do you prefer?") {
		t.Errorf("the question form does not show the question: %q", text)
	}
	if n := w.count(`dialog#question[open] fieldset[data-question] input[type=radio]`); n < 2 {
		t.Errorf("the single-choice question has %d radio buttons, want Red and Blue", n)
	}
	w.pick("Blue")
	w.shot("question-form")
	w.click("#question-submit")
	w.waitFor("the question form to close", `!document.querySelector('dialog#question[open]')`)
	w.waitTurnEnd(1, "complete", false)
	result := `[...document.querySelectorAll('#conversation .tool[data-tool-name="AskUserQuestion"] .tool-result')]`
	w.waitFor("the answer Blue in the tool's result", result+`.some(r => r.textContent.includes('Blue'))`)
	w.shot("question-answered")

	w.send("ASKMULTI")
	w.waitFor("the multiple-choice form", `!!document.querySelector('dialog#question[open] fieldset[data-question] input[type=checkbox]')`)
	w.pick("Cheese")
	w.pick("Olives")
	w.shot("question-multi")
	w.click("#question-submit")
	w.waitFor("the question form to close", `!document.querySelector('dialog#question[open]')`)
	w.waitTurnEnd(2, "complete", false)
	w.waitFor("the second result", result+`.length >= 2`)
	last := webEval[string](w, result+`.pop().textContent`)
	if !strings.Contains(last, "Cheese") || !strings.Contains(last, "Olives") || strings.Contains(last, "Mushrooms") {
		t.Errorf("the multiple-choice result is %q, want Cheese and Olives only", last)
	}

	// An answer of one's own, typed in Other.
	w.send("ASKUSER again")
	w.waitFor("the question form", `!!document.querySelector('dialog#question[open] input.other')`)
	w.do("typing an answer of one's own", webWait, chromedp.SendKeys(chromedp.CSS(`dialog#question[open] input.other`), "Turquoise"))
	w.click("#question-submit")
	w.waitTurnEnd(3, "complete", false)
	w.waitFor("the third result", result+`.length >= 3`)
	if own := webEval[string](w, result+`.pop().textContent`); !strings.Contains(own, "Turquoise") || strings.Contains(own, "Blue") {
		t.Errorf("the result of an answer typed in Other is %q, want Turquoise", own)
	}
}

// TestWebInterrupt (e): #interrupt mid-stream ends the SLOW turn as
// cancelled, its partial text kept; the next prompt is answered.
func TestWebInterrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{}, false)
	w.send("SLOW")
	w.waitFor("the SLOW answer, partial", partialJS(0))
	w.click("#interrupt")
	w.waitTurnEnd(1, "cancelled", false)
	if got := strings.TrimSpace(w.lastAssistant()); !strings.Contains(got, "counting") || len(got) >= len(strings.TrimSpace(svSlow)) {
		t.Errorf("the interrupted answer shown is %q, want part of the SLOW text", got)
	}
	w.shot("interrupt-cancelled")
	w.send("Say hello again")
	w.waitTurnEnd(2, "complete", false)
	if got := w.lastAssistant(); !strings.Contains(got, webFallbackText) {
		t.Errorf("the answer after the interrupt is %q, want %q", got, webFallbackText)
	}
	if ends := w.turnEnds(); len(ends) != 2 {
		t.Errorf("turn ends shown: %v, want [cancelled complete]", ends)
	}
}

// TestWebSubagentNesting (f): the subagent's Read is shown inside the
// Agent call's .tool-children, and nowhere else.
func TestWebSubagentNesting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := webSession(t, dir, svOpts{}, false)
	w.send("SUBAGENT")
	if allowed := w.waitTurnEnd(1, "complete", true); len(allowed) > 0 {
		t.Logf("permission prompts allowed: %q", allowed)
	}
	nested := `#conversation .tool[data-tool-name="Agent"] .tool-children .tool[data-tool-name="Read"]`
	if n := w.count(nested); n != 1 {
		t.Errorf("%d Read calls inside the Agent call's .tool-children, want 1", n)
	}
	if n := w.count(`#conversation .tool[data-tool-name="Read"]`); n != w.count(nested) {
		t.Errorf("%d Read calls shown, %d of them under the Agent call", n, w.count(nested))
	}
	if got := w.textOf(nested + " .tool-result"); !strings.Contains(got, "hello world") {
		t.Errorf("the subagent's Read result is %q, want the file's hello world", got)
	}
	w.shot("subagent-nested")
}

// TestWebEditDiff (g): EDITFILE's Edit (allowed when asked) is shown as a
// diff: line two removed, "line 2 (edited)" added; the file changed.
func TestWebEditDiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "edit_target.txt")
	if err := os.WriteFile(target, []byte("line one\nline two\nline three\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := webSession(t, dir, svOpts{}, false)
	w.send("EDITFILE")
	if allowed := w.waitTurnEnd(1, "complete", true); len(allowed) > 0 {
		t.Logf("permission prompts allowed: %q", allowed)
	}
	diff := webEval[string](w, `JSON.stringify({
		del: [...document.querySelectorAll('#conversation .diff .diff-del')].map(e => e.textContent),
		add: [...document.querySelectorAll('#conversation .diff .diff-add')].map(e => e.textContent)})`)
	has := func(key, want string) bool {
		for _, v := range gjson.Get(diff, key).Array() {
			if strings.Contains(v.Str, want) {
				return true
			}
		}
		return false
	}
	if !has("del", "line two") || !has("add", "line 2 (edited)") {
		t.Errorf("the diff shown is %s, want line two removed and line 2 (edited) added", diff)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "line one\nline 2 (edited)\nline three\n" {
		t.Errorf("edit_target.txt: %q, %v", data, err)
	}
	w.shot("edit-diff")
}

// TestWebReloadMidTurn (h): the page reloaded while SLOW streams rebuilds
// the conversation from the session's stream: after the turn, the prompt
// once, the whole answer once, one turn end.
func TestWebReloadMidTurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{}, false)
	w.send("SLOW")
	w.waitFor("the SLOW answer, partial", partialJS(0))
	w.shot("reload-before")
	w.do("reloading the page", webWait, chromedp.Reload())
	w.waitLive()
	// The reload must land mid-turn, or this tests only a replay of a
	// finished one: the SLOW turn lasts about 5 s.
	if ends := w.turnEnds(); len(ends) != 0 {
		t.Errorf("the SLOW turn had ended (%v) by the time the reloaded page was live", ends)
	}
	w.waitTurnEnd(1, "complete", false)
	w.shot("reload-after")
	users := webEval[[]string](w, `[...document.querySelectorAll('#conversation .msg.user')].map(e => e.textContent)`)
	if len(users) != 1 || !strings.Contains(users[0], "SLOW") {
		t.Errorf("user messages after the reload: %q, want the prompt SLOW once", users)
	}
	answers := webEval[[]string](w, `[...document.querySelectorAll('#conversation .msg.assistant')].map(m => (m.querySelector('.md') || m).textContent)`)
	if full := strings.TrimSpace(svSlow); len(answers) != 1 || strings.TrimSpace(answers[0]) != full {
		t.Errorf("assistant messages after the reload: %q, want once %q", answers, full)
	}
	if ends := w.turnEnds(); len(ends) != 1 {
		t.Errorf("turn ends after the reload: %v, want one", ends)
	}
}

// TestWebMarkupInert (i): the model's Markdown with a <script>, an
// <img onerror> and a javascript: link, in a tab that ignores the CSP (so
// the page itself is what keeps them inert): they are shown as text, no
// such element or link is made, nothing runs.
func TestWebMarkupInert(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := webSession(t, dir, svOpts{}, true)
	w.send("MARKUP")
	w.waitTurnEnd(1, "complete", false)
	text := w.textOf("#conversation")
	for _, want := range []string{"<script>", "onerror", "Markup"} {
		if !strings.Contains(text, want) {
			t.Errorf("the conversation does not show %q as text", want)
		}
	}
	const inertJS = `JSON.stringify({
		elements: [...document.querySelectorAll('#conversation img, #conversation script, #conversation iframe, #conversation object, #conversation embed')].map(e => e.outerHTML.slice(0, 200)),
		jsLinks: [...document.querySelectorAll('#conversation a')].filter(a => /^\s*javascript:/i.test(a.getAttribute('href') || '')).map(a => a.outerHTML.slice(0, 200)),
		handlers: [...document.querySelectorAll('#conversation *')].flatMap(e => [...e.attributes].filter(a => /^on/i.test(a.name)).map(a => e.tagName + ' ' + a.name)),
		pwned: typeof window.__pwned})`
	check := func(when string) {
		got := webEval[string](w, inertJS)
		if n := w.count(`#conversation a[href^="javascript:"]`); n != 0 ||
			len(gjson.Get(got, "elements").Array()) != 0 || len(gjson.Get(got, "jsLinks").Array()) != 0 ||
			len(gjson.Get(got, "handlers").Array()) != 0 || gjson.Get(got, "pwned").Str != "undefined" {
			t.Errorf("%s: the model's markup is live in the page: %s", when, got)
		}
	}
	check("at the turn's end")
	w.shot("markup")
	// An onerror handler or a script would run after a load attempt: a
	// moment later, still nothing.
	time.Sleep(time.Second)
	check("a second later")
}
