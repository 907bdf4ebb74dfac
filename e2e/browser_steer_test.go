package e2e

// The web UI's steering and its first minute (docs/protocol/web.md,
// "Steering and queueing", "The first minute"), in the shared headless
// Chromium against the real CLI and the test's fake model.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestWebSteerFirstMinute: with no session on screen, a prompt starts one
// in the first --dir; during its tool loop Enter steers (the model gets
// the text in the same turn, which ends once) and Queue holds a prompt
// until the turn ends, then sends it; a folder chosen later becomes where
// the next first prompt starts a session.
func TestWebSteerFirstMinute(t *testing.T) {
	t.Parallel()
	dirA, dirB := t.TempDir(), t.TempDir()
	s := svStart(t, svOpts{external: true, args: []string{"--dir", dirA, "--dir", dirB}})
	w := newTab(t, s, false)
	w.open("/", true)
	w.waitFor("the composer enabled with no session", `!document.querySelector('#prompt').disabled && !document.querySelector('#send').disabled`)
	if p := webEval[string](w, `document.querySelector('#prompt').placeholder`); !strings.Contains(p, filepath.Base(dirA)) {
		t.Errorf("the first prompt's placeholder %q does not name the first --dir %s", p, dirA)
	}

	tok := token("steer")
	w.send("STEER " + tok)
	w.waitFor("the session started by the prompt", `location.hash.startsWith('#s=') && document.querySelectorAll('.session-item[data-id]').length === 1`)
	if cwd := w.textOf("#cwd"); !strings.HasSuffix(cwd, filepath.Base(dirA)) {
		t.Errorf("the session runs in %q, want the first --dir %s", cwd, dirA)
	}
	w.waitFor("the first tool call", `!!document.querySelector('.tool[data-tool-name=Bash]')`)
	if label := w.textOf("#send"); label != "Steer" || webEval[bool](w, `document.querySelector('#queue').hidden`) {
		t.Errorf("during the turn #send is %q and #queue hidden=%v, want Steer and a Queue button", label, webEval[bool](w, `document.querySelector('#queue').hidden`))
	}
	// The steering text is put in the composer at once (typed key by key
	// it took long enough, on a loaded machine, to miss the turn's tool
	// loop: the fake model's STEER gives about four seconds), then Enter
	// steers.
	steer := "mind " + token("steerw")
	w.setPrompt(steer)
	w.do("pressing Enter", webWait, chromedp.KeyEvent(kb.Enter))
	w.waitFor("the steer in the conversation", `[...document.querySelectorAll('#conversation .msg.user.steer')].some(m => m.textContent.includes(`+jsq(steer)+`))`)
	w.do("typing a prompt and Alt+Enter", webWait,
		chromedp.SendKeys(chromedp.CSS("#prompt"), "hello"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(kb.ModifierAlt)))
	w.waitFor("the queued chip", `document.querySelector('#queued').textContent === '1 queued'`)

	// The queued prompt's turn may have ended too by now: each turn's
	// answer is read before its own end.
	w.waitTurnEnd(1, "complete", false)
	if got := w.assistantOfTurn(1); !strings.Contains(got, "Steered by: "+steer+".") {
		t.Errorf("the steered turn's answer %q does not say it was steered by %q", got, steer)
	}
	steerCheckModel(t, tok, steer)
	w.waitTurnEnd(2, "complete", false)
	if got := w.assistantOfTurn(2); !strings.Contains(got, webFallbackText) {
		t.Errorf("the queued prompt's answer: %q", got)
	}
	if ends := w.turnEnds(); len(ends) != 2 || w.count(".msg.user.steer.taken") != 1 || w.count(".msg.user") != 3 {
		t.Errorf("turn ends %q, %d taken steers, %d user messages; want 2 turn ends, the steer taken, 3 messages",
			ends, w.count(".msg.user.steer.taken"), w.count(".msg.user"))
	}
	if !webEval[bool](w, `document.querySelector('#queued').hidden`) {
		t.Errorf("the queued chip is still shown: %q", w.textOf("#queued"))
	}

	// The folder chosen last: a session started in dirB through the form
	// makes dirB where the next first prompt starts one.
	w.startFromForm(dirB)
	w.open("/", true)
	w.waitFor("the first-prompt placeholder", `document.querySelector('#prompt').placeholder.includes(`+jsq(filepath.Base(dirB))+`)`)
}
