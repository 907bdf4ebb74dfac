package e2e

// The harness of the web UI's browser tests (browser_test.go): one headless
// Chromium for the whole package, started on first use and stopped by
// TestMain (stopBrowser); each test drives a tab of its own (webTab), so
// the tests run in parallel. A tab records the page's console errors,
// uncaught exceptions and browser-log errors, and fails its test on any
// the test did not expect. Screenshots of the states a test reaches go to
// $CCBRIDGE_ARTIFACTS/screenshots (default .ci/artifacts/screenshots).
//
// The tests find things on the page only by the selectors that
// docs/protocol/web.md ("Hooks for tests") guarantees.
//
// The browser: $CCBRIDGE_TEST_CHROMIUM, else /usr/bin/chromium
// (scripts/install-browser.sh installs Debian's chromium). Without it the
// tests are skipped, except under CI=true, where they fail.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
)

const (
	webWidth, webHeight = 1280, 800
	// webWait bounds every wait for something the page shows.
	webWait = 45 * time.Second
	// webPollEvery is how often a wait looks again.
	webPollEvery = 50 * time.Millisecond
)

// The shared browser.
var browser struct {
	once   sync.Once
	err    error
	ctx    context.Context // the browser's chromedp context: tabs are its children
	cancel func()          // closes the browser, then the allocator
	dir    string          // its --user-data-dir
}

// chromiumPath returns the browser the tests run, or skips the test (fails
// it under CI=true).
func chromiumPath(t testing.TB) string {
	t.Helper()
	p := os.Getenv("CCBRIDGE_TEST_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the browser %s is missing (run scripts/install-browser.sh or set CCBRIDGE_TEST_CHROMIUM)", p)
	}
	t.Skipf("the browser %s is not installed; run scripts/install-browser.sh", p)
	return ""
}

// sharedBrowser returns the context of the package's browser, starting it
// on first use.
func sharedBrowser(t testing.TB) context.Context {
	t.Helper()
	path := chromiumPath(t)
	browser.once.Do(func() {
		pki, err := svTestPKI()
		if err != nil {
			browser.err = err
			return
		}
		dir, err := os.MkdirTemp("", "ccbridge-e2e-chromium-")
		if err != nil {
			browser.err = err
			return
		}
		browser.dir = dir
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.Flag("disable-quic", true),
			chromedp.NoFirstRun,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-extensions", true),
			// A name that resolves to loopback, as an attacker's name
			// rebound to 127.0.0.1 would (TestWebCrossSite).
			chromedp.Flag("host-resolver-rules", "MAP "+webRebindHost+" 127.0.0.1"),
			// The serves started with tls (svOpts) use the package's test
			// certificate: the browser trusts its key and no other (a
			// flag Chromium honours with a --user-data-dir only).
			chromedp.Flag("ignore-certificate-errors-spki-list", pki.spki),
			chromedp.UserDataDir(dir),
			chromedp.WindowSize(webWidth, webHeight),
		)
		allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(allocCtx)
		browser.ctx = ctx
		browser.cancel = func() {
			cancel()
			allocCancel()
		}
		start := time.Now()
		if err := chromedp.Do(ctx); err != nil {
			browser.err = fmt.Errorf("starting %s: %w", path, err)
			return
		}
		if testing.Verbose() {
			fmt.Printf("e2e: chromium started in %.1f s\n", time.Since(start).Seconds())
		}
	})
	if browser.err != nil {
		t.Fatalf("the browser: %v", browser.err)
	}
	return browser.ctx
}

// stopBrowser closes the shared browser, if it was started; TestMain calls
// it after the tests.
func stopBrowser() {
	if browser.cancel != nil {
		browser.cancel()
	}
	if browser.dir != "" {
		os.RemoveAll(browser.dir)
	}
}

// artifactsDir is where the screenshots go, created on first use.
var artifactsDir = sync.OnceValues(func() (string, error) {
	root := os.Getenv("CCBRIDGE_ARTIFACTS")
	if root == "" {
		root = filepath.Join(repoRoot, ".ci", "artifacts")
	}
	dir := filepath.Join(root, "screenshots")
	return dir, os.MkdirAll(dir, 0o755)
})

// webTab is one test's tab, on a page of one ccbridge serve.
type webTab struct {
	t      *testing.T
	ctx    context.Context
	origin string // http://ADDR (https:// with tls) of the serve
	s      *svServer

	mu       sync.Mutex
	problems []string // console errors, uncaught exceptions, browser-log errors
	expected []string // substrings of problems the test expects
}

// newTab opens a tab of the shared browser for a page of s. With bypassCSP
// the tab ignores the page's Content-Security-Policy (set before any
// navigation). It is closed at cleanup, after the page's errors are
// checked; call it after svStart, so that the tab closes before serve
// stops.
func newTab(t *testing.T, s *svServer, bypassCSP bool) *webTab {
	t.Helper()
	bctx := sharedBrowser(t)
	w := &webTab{t: t, s: s, origin: strings.TrimSuffix(s.base, svPath)}
	ctx, cancel := chromedp.NewContext(bctx, chromedp.WithListener(w.listen))
	w.ctx = ctx
	t.Cleanup(func() {
		w.checkConsole()
		cancel()
	})
	// The first action opens the tab: no timeout on it (it would close
	// the tab when it ends).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	w.do("setting the viewport", 10*time.Second, chromedp.EmulateViewport(webWidth, webHeight))
	if bypassCSP {
		w.do("bypassing the CSP", 10*time.Second, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
			return err
		}))
	}
	return w
}

// listen runs in the tab's event loop: it only records.
func (w *webTab) listen(ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		if d == nil {
			return
		}
		msg = "uncaught exception: " + d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		msg += fmt.Sprintf(" (%s:%d:%d)", d.URL, d.LineNumber+1, d.ColumnNumber+1)
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			switch {
			case a == nil:
			case a.Description != "":
				parts = append(parts, a.Description)
			case len(a.Value) > 0:
				var str string
				if json.Unmarshal(a.Value, &str) == nil {
					parts = append(parts, str)
				} else {
					parts = append(parts, string(a.Value))
				}
			default:
				parts = append(parts, string(a.Type))
			}
		}
		msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
	case *cdplog.EventEntryAdded:
		if ev.Entry == nil || ev.Entry.Level != cdplog.EntryLevelError {
			return
		}
		msg = "browser log (" + string(ev.Entry.Source) + "): " + ev.Entry.Text
		if ev.Entry.URL != "" {
			msg += " " + ev.Entry.URL
		}
	default:
		return
	}
	w.mu.Lock()
	w.problems = append(w.problems, msg)
	w.mu.Unlock()
}

// expect lets the page log errors holding s without failing the test.
func (w *webTab) expect(s string) {
	w.mu.Lock()
	w.expected = append(w.expected, s)
	w.mu.Unlock()
}

// unexpected returns the problems the test did not expect.
func (w *webTab) unexpected() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.problems {
		ok := false
		for _, e := range w.expected {
			ok = ok || strings.Contains(p, e)
		}
		if !ok {
			out = append(out, p)
		}
	}
	return out
}

func (w *webTab) checkConsole() {
	for _, p := range w.unexpected() {
		w.t.Errorf("the page reported an error: %s", p)
	}
}

// do runs steps with a timeout, failing the test (with diagnostics) on an
// error.
func (w *webTab) do(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		w.fatalf("%s: %v", what, err)
	}
}

// webEval evaluates a JavaScript expression in the page.
func webEval[T any](w *webTab, expr string) T {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		w.fatalf("evaluating %.200s: %v", expr, err)
	}
	return v
}

// waitFor waits until the JavaScript expression cond is truthy.
func (w *webTab) waitFor(what, cond string) {
	w.t.Helper()
	w.waitForWithin(what, cond, webWait)
}

func (w *webTab) waitForWithin(what, cond string, timeout time.Duration) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void]("!!("+cond+")",
		chromedp.WithPollingInterval(webPollEvery), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		w.fatalf("waiting %v for %s: %v", timeout, what, err)
	}
}

// shot saves a screenshot of the tab as web-NAME.png.
func (w *webTab) shot(name string) {
	w.t.Helper()
	if err := w.saveShot(name); err != nil {
		w.t.Errorf("screenshot %s: %v", name, err)
	}
}

func (w *webTab) saveShot(name string) error {
	dir, err := artifactsDir()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(w.ctx, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "web-"+name+".png"), png, 0o644)
}

// webStateJS describes what the page shows, for failure messages.
const webStateJS = `(() => {
	const c = document.querySelector('#conversation');
	return JSON.stringify({
		url: location.href,
		conn: document.body ? document.body.dataset.conn : null,
		turn: c ? c.dataset.turn : null,
		seq: c ? c.dataset.seq : null,
		openDialogs: [...document.querySelectorAll('dialog[open]')].map(d => d.id),
		turnEnds: [...document.querySelectorAll('.turn-end')].map(e => e.dataset.kind),
		errorLines: [...document.querySelectorAll('.error-line')].map(e => e.textContent.slice(0, 300)),
		text: ((c && c.innerText) || (document.body && document.body.innerText) || '').slice(-3000),
	});
})()`

// fatalf fails the test after saving a screenshot and logging what the
// page shows and reported.
func (w *webTab) fatalf(format string, args ...any) {
	w.t.Helper()
	name := "failure-" + strings.NewReplacer("/", "-", " ", "_").Replace(w.t.Name())
	if err := w.saveShot(name); err != nil {
		w.t.Logf("no screenshot of the failure: %v", err)
	} else {
		w.t.Logf("screenshot of the failure: web-%s.png", name)
	}
	ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](webStateJS))
	cancel()
	if err != nil {
		state = "(unreadable: " + err.Error() + ")"
	}
	w.mu.Lock()
	problems := strings.Join(w.problems, "\n  ")
	w.mu.Unlock()
	w.t.Fatalf(format+"\nthe page: %s\nits errors:\n  %s", append(args, state, problems)...)
}

// open loads path (from "/") in the tab; with live, it waits until the
// page's stream is connected.
func (w *webTab) open(path string, live bool) {
	w.t.Helper()
	w.do("loading "+path, webWait, chromedp.Navigate(w.origin+path))
	if live {
		w.waitLive()
	}
}

// waitLive waits until the page's stream is connected.
func (w *webTab) waitLive() {
	w.t.Helper()
	w.waitFor("the page to connect (body[data-conn=live])", `document.body && document.body.dataset.conn === 'live'`)
}

// ---- the page's sessions

// webCreateSession starts a web session in dir with POST /api/web/sessions
// and returns its id.
func webCreateSession(t *testing.T, s *svServer, dir string) string {
	t.Helper()
	origin := strings.TrimSuffix(s.base, svPath)
	body, _ := json.Marshal(map[string]string{"mode": "new", "cwd": dir})
	code, _, b, err := svDo(s.client, http.MethodPost, origin+"/api/web/sessions", "", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST /api/web/sessions: %v", err)
	}
	id := gjson.GetBytes(b, "id").Str
	if code != http.StatusCreated || id == "" {
		t.Fatalf("POST /api/web/sessions: HTTP %d: %.500s", code, b)
	}
	return id
}

// webSession starts serve with dir as its one --dir, a tab, and a web
// session in dir shown on the page (/#s=ID).
func webSession(t *testing.T, dir string, o svOpts, bypassCSP bool) *webTab {
	t.Helper()
	o.args = append([]string{"--dir", dir}, o.args...)
	s := svStart(t, o)
	w := newTab(t, s, bypassCSP)
	id := webCreateSession(t, s, dir)
	w.open("/#s="+id, true)
	w.waitFor("the composer", `!!document.querySelector('#prompt')`)
	return w
}

// ---- the conversation

// jsq quotes s as a JavaScript string.
func jsq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// send types text into the composer and sends it, and waits until the
// page shows it as the n-th user message.
func (w *webTab) send(text string) {
	w.t.Helper()
	before := webEval[int](w, `document.querySelectorAll('#conversation .msg.user').length`)
	w.do("typing a prompt", webWait,
		chromedp.WaitVisible(chromedp.CSS("#prompt")),
		chromedp.SendKeys(chromedp.CSS("#prompt"), text),
		chromedp.WaitEnabled(chromedp.CSS("#send")),
		chromedp.Click(chromedp.CSS("#send")),
	)
	w.waitFor(fmt.Sprintf("the prompt %q in the conversation", text), fmt.Sprintf(
		`[...document.querySelectorAll('#conversation .msg.user')].length > %d &&
		 [...document.querySelectorAll('#conversation .msg.user')].pop().textContent.includes(%s)`, before, jsq(text)))
}

// setPrompt puts text in the composer at once, as a paste would, focused
// for the keys that follow.
func (w *webTab) setPrompt(text string) {
	w.t.Helper()
	webEval[bool](w, `(p => { p.focus(); p.value = `+jsq(text)+`; p.dispatchEvent(new Event('input', {bubbles: true})); return true; })(document.querySelector('#prompt'))`)
}

// click clicks the element sel. The page may draw sel anew between the
// moment the browser finds it and the click (a panel that re-renders on
// an update from the session): the click then fails with "Could not find
// node with given id" and is made again on the element now there, a few
// times, within webWait.
func (w *webTab) click(sel string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, webWait)
	defer cancel()
	for try := 1; ; try++ {
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node with given id") || try == 5 {
			w.fatalf("clicking %s: %v", sel, err)
		}
		w.t.Logf("clicking %s: the element was drawn anew (%v); again", sel, err)
	}
}

// turnEnds returns the data-kind of every .turn-end shown, in order.
func (w *webTab) turnEnds() []string {
	w.t.Helper()
	return webEval[[]string](w, `[...document.querySelectorAll('#conversation .turn-end')].map(e => e.dataset.kind)`)
}

// waitTurnEnd waits until the page shows n turn ends, and checks that the
// n-th is of kind. With allow, each permission prompt that opens
// meanwhile is allowed once; their tool names are returned.
func (w *webTab) waitTurnEnd(n int, kind string, allow bool) []string {
	w.t.Helper()
	var allowed []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := webEval[string](w, `JSON.stringify({
			ends: [...document.querySelectorAll('#conversation .turn-end')].map(e => e.dataset.kind),
			permission: !!document.querySelector('dialog#permission[open]'),
			text: (document.querySelector('dialog#permission[open]') || {}).textContent || ''})`)
		ends := gjson.Get(st, "ends").Array()
		if len(ends) >= n {
			if got := ends[n-1].Str; got != kind {
				w.fatalf("turn end %d is %q, want %q", n, got, kind)
			}
			return allowed
		}
		if gjson.Get(st, "permission").Bool() {
			if !allow {
				w.fatalf("a permission prompt opened: %.300s", gjson.Get(st, "text").Str)
			}
			desc := []rune(strings.Join(strings.Fields(gjson.Get(st, "text").Str), " "))
			allowed = append(allowed, string(desc[:min(len(desc), 60)]))
			w.click(`dialog#permission[open] button[data-action=allow]`)
			w.waitFor("the permission dialog to close", `!document.querySelector('dialog#permission[open]')`)
			continue
		}
		if time.Now().After(deadline) {
			w.fatalf("no turn end %d (%s) within 60 s", n, kind)
		}
		time.Sleep(webPollEvery)
	}
}

// lastAssistant is the text of the last assistant message's Markdown.
func (w *webTab) lastAssistant() string {
	w.t.Helper()
	return webEval[string](w, `(() => {
		const m = [...document.querySelectorAll('#conversation .msg.assistant')].pop();
		if (!m) return '';
		return (m.querySelector('.md') || m).textContent;
	})()`)
}

// assistantOfTurn returns the text of the last assistant message before
// the n-th turn end (1 is the first): the answer of that turn, whatever
// turns ended since.
func (w *webTab) assistantOfTurn(n int) string {
	w.t.Helper()
	return webEval[string](w, fmt.Sprintf(`(() => {
		const end = [...document.querySelectorAll('#conversation .turn-end')][%d];
		if (!end) return '';
		const m = [...document.querySelectorAll('#conversation .msg.assistant')]
			.filter(m => m.compareDocumentPosition(end) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
		if (!m) return '';
		return (m.querySelector('.md') || m).textContent;
	})()`, n-1))
}

// count returns how many elements match sel.
func (w *webTab) count(sel string) int {
	w.t.Helper()
	return webEval[int](w, `document.querySelectorAll(`+jsq(sel)+`).length`)
}

// textOf returns the textContent of the first element matching sel ("" if
// none).
func (w *webTab) textOf(sel string) string {
	w.t.Helper()
	return webEval[string](w, `(document.querySelector(`+jsq(sel)+`) || {}).textContent || ''`)
}
