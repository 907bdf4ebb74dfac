package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
)

// webRebindHost is a name the shared browser resolves to 127.0.0.1.
const webRebindHost = "rebound.ccbridge.test"

// TestWebCrossSite attacks ccbridge serve from the browser the way a
// hostile site would: a page of another origin (another port of
// 127.0.0.1) tries to start a session with a simple no-cors POST, a JSON
// POST, a form post, and to read the session list and a session's stream;
// then a name rebound to 127.0.0.1 loads the page and the API on serve's
// own port. Nothing may start a session, read anything, or load the page.
func TestWebCrossSite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := svStart(t, svOpts{args: []string{"--dir", dir}})
	origin := strings.TrimSuffix(s.base, svPath)
	id := webCreateSession(t, s, dir) // a session to try to read

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>evil</title>
<iframe name="sink"></iframe>
<form id="f" method="POST" action="%[1]s/api/web/sessions" target="sink" enctype="text/plain">
<input name='{"mode":"new","x":"' value='"}'></form>
<script>
window.results = {};
const T = %[1]q;
async function attempt(name, f) {
  try { window.results[name] = await f(); } catch (e) { window.results[name] = 'blocked: ' + e.name; }
}
(async () => {
  await attempt('nocors', async () => { const r = await fetch(T + '/api/web/sessions', {method: 'POST', mode: 'no-cors', body: '{"mode":"new"}'}); return 'opaque:' + r.type; });
  await attempt('json', async () => { const r = await fetch(T + '/api/web/sessions', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"mode":"new"}'}); return 'read:' + r.status; });
  await attempt('message', async () => { const r = await fetch(T + '/api/web/sessions/%[2]s/messages', {method: 'POST', mode: 'no-cors', body: '{"type":"user_message","text":"EVIL"}'}); return 'opaque:' + r.type; });
  await attempt('list', async () => { const r = await fetch(T + '/api/web/sessions'); return 'read:' + (await r.text()); });
  await attempt('stream', () => new Promise((ok) => {
    const es = new EventSource(T + '/api/web/sessions/%[2]s/events');
    es.onmessage = (e) => { es.close(); ok('read:' + e.data); };
    es.onerror = () => { es.close(); ok('blocked: error'); };
  }));
  document.getElementById('f').submit();
  setTimeout(() => { window.done = true; }, 500);
})();
</script>`, origin, id)
	}))
	defer evil.Close()

	w := newTab(t, s, false)
	// The browser reports the refused requests as errors of the page.
	w.expect("403")
	w.expect("CORS")
	w.expect("EventSource")
	w.expect("Failed to load resource")
	w.expect("frame-ancestors") // the form's answer may not even be shown in the hostile page's frame
	w.do("loading the hostile page", webWait, chromedp.Navigate(evil.URL))
	w.waitFor("the hostile page's attempts", `window.done === true`)
	results := webEval[map[string]string](w, `window.results`)
	t.Logf("the hostile page's attempts: %v", results)
	for name, r := range results {
		if strings.HasPrefix(r, "read:") {
			t.Errorf("the page of another origin read %s: %.200s", name, r)
		}
	}
	if len(results) != 5 {
		t.Errorf("attempts %v, want 5", results)
	}
	// Nothing started, nothing sent: the one session, with no prompt.
	l := webList(t, s)
	if n := len(l.Get("open").Array()); n != 1 {
		t.Errorf("%d web sessions after the attack, want the test's 1: %s", n, l.Raw)
	}
	// A prompt of the test's own: its echo comes after the echo of any
	// prompt that reached the session before it.
	webPost(t, s, id, map[string]string{"type": "user_message", "text": "MARKER"})
	first := webStreamWait(t, s, id, "the first prompt", func(l gjson.Result) bool {
		return l.Get("type").Str == "user_message"
	})
	if text := first.Get("text").Str; text != "MARKER" {
		t.Errorf("the first prompt the session took is %q, want the test's MARKER", text)
	}

	// A name rebound to 127.0.0.1, on serve's own port: the page and the
	// API refuse it, so its scripts are same-origin with nothing.
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(origin, "http://"))
	for _, path := range []string{"/", "/api/web/sessions"} {
		w.do("loading the page through the rebound name", webWait, chromedp.Navigate("http://"+webRebindHost+":"+port+path))
		body := webEval[string](w, `document.body ? document.body.innerText : ''`)
		if !strings.Contains(body, "forbidden_host") || strings.Contains(body, id) {
			t.Errorf("%s through %s: %.300s", path, webRebindHost, body)
		}
	}
	w.shot("cross-site-rebound")
}
