package lane000

import (
	"testing"
	"time"

	"github.com/tidwall/sjson"
)

const (
	baseStdin = `{"type":"control.stdin.request","v":1,"request_id":"req-1","session_id":"sess-1",` +
		`"agent_id":"codex:abc","thread_id":"th-1","team":"atm-dev","sender":"arch-ctm",` +
		`"sent_at":"2026-02-20T21:15:00Z","content":"line one\nline two","content_encoding":"utf-8",` +
		`"interrupt":false,"meta":{"ui_source":"tui","retry_count":2}}`
	baseInterrupt = `{"type":"control.interrupt.request","v":1,"request_id":"req-2","session_id":"sess-1",` +
		`"agent_id":"codex:abc","team":"atm-dev","sender":"arch-ctm","sent_at":"2026-02-20T21:16:12Z",` +
		`"signal":"interrupt","meta":{"ui_source":"tui","retry_count":0}}`
	sum64   = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	baseRef = `{"path":"/srv/in/req.txt","size_bytes":143201,"sha256":"` + sum64 + `","mime":"text/plain; charset=utf-8"}`
)

var t0 = time.Date(2026, 2, 20, 21, 15, 0, 0, time.UTC)

// set returns line with the field at path set to the raw JSON value
// (deleted when raw is "").
func set(t testing.TB, line, path, raw string) string {
	t.Helper()
	var out string
	var err error
	if raw == "" {
		out, err = sjson.Delete(line, path)
	} else {
		out, err = sjson.SetRaw(line, path, raw)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withRef is baseStdin with content replaced by content_ref ref.
func withRef(t testing.TB, ref string) string {
	return set(t, set(t, baseStdin, "content", ""), "content_ref", ref)
}
