package control

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// syncBuffer is a bytes.Buffer the audit's writer and the test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func auditLines(t *testing.T, out string) []gjson.Result {
	t.Helper()
	var lines []gjson.Result
	for _, l := range strings.SplitAfter(out, "\n") {
		if l == "" {
			continue
		}
		if !strings.HasSuffix(l, "\n") || !gjson.Valid(l) {
			t.Fatalf("not a JSON line: %q", l)
		}
		r := gjson.Parse(l)
		if !r.Get("request_id").Exists() {
			t.Fatalf("line without request_id: %s", l)
		}
		ts, err := time.Parse(time.RFC3339Nano, r.Get("time").String())
		if err != nil || !strings.HasSuffix(r.Get("time").String(), "Z") || ts.IsZero() {
			t.Fatalf("time is not RFC 3339 UTC: %s", l)
		}
		lines = append(lines, r)
	}
	return lines
}

func TestAuditFields(t *testing.T) {
	var out syncBuffer
	a := NewAudit(&out, false)
	a.Log(AuditEvent{Event: "ack", RequestID: "r\"1", Team: "atm-dev", SessionID: "s", AgentID: "codex:abc",
		Sender: "arch-ctm", Lane: "000", Result: "ok", Duplicate: true, Detail: "queued", Payload: []byte("secret text")})
	a.Log(AuditEvent{Event: "request", RequestID: "r2"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	lines := auditLines(t, out.String())
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out.String())
	}
	want := map[string]string{"event": "ack", "request_id": "r\"1", "team": "atm-dev", "session_id": "s",
		"agent_id": "codex:abc", "sender": "arch-ctm", "lane": "000", "result": "ok", "duplicate": "true", "detail": "queued"}
	for f, v := range want {
		if got := lines[0].Get(f).String(); got != v {
			t.Errorf("%s = %q, want %q", f, got, v)
		}
	}
	// Every field is present even when empty; no payload by default.
	for f := range want {
		if !lines[1].Get(f).Exists() {
			t.Errorf("second line lacks %q: %s", f, lines[1].Raw)
		}
	}
	if strings.Contains(out.String(), "payload") || strings.Contains(out.String(), "secret") {
		t.Errorf("payload written without payloads on:\n%s", out.String())
	}
}

func TestAuditPayloads(t *testing.T) {
	var out syncBuffer
	a := NewAudit(&out, true)
	a.Log(AuditEvent{Event: "request", RequestID: "r1", Payload: []byte("line one\nline \"two\" \xff\xfe end")})
	a.Log(AuditEvent{Event: "ack", RequestID: "r1"})
	a.Close()
	lines := auditLines(t, out.String())
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	if got, want := lines[0].Get("payload").String(), "line one\nline \"two\" \ufffd\ufffd end"; got != want {
		t.Errorf("payload = %q, want %q (invalid UTF-8 replaced)", got, want)
	}
	if lines[1].Get("payload").Exists() {
		t.Errorf("payload on an event without one: %s", lines[1].Raw)
	}
}

// Many goroutines at once: every event one whole valid line, none lost.
func TestAuditConcurrent(t *testing.T) {
	var out syncBuffer
	a := NewAudit(&out, false)
	const workers, per = 8, 250
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				a.Log(AuditEvent{Event: "request", RequestID: fmt.Sprintf("w%d-%d", w, i), Detail: strings.Repeat("x", i),
					Payload: []byte("not to be written")})
			}
		}()
	}
	wg.Wait()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	lines := auditLines(t, out.String())
	seen := map[string]bool{}
	for _, l := range lines {
		id := l.Get("request_id").String()
		if seen[id] {
			t.Fatalf("request_id %s twice", id)
		}
		seen[id] = true
		if l.Get("payload").Exists() {
			t.Fatalf("payload written by default: %s", l.Raw)
		}
	}
	if len(seen) != workers*per {
		t.Fatalf("%d events written, want %d", len(seen), workers*per)
	}
}

// gateWriter blocks every Write until open is closed.
type gateWriter struct {
	open chan struct{}
	out  syncBuffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	<-g.open
	return g.out.Write(p)
}

// A stalled writer does not hold up Log; the lines come out once it moves.
func TestAuditDoesNotBlock(t *testing.T) {
	g := &gateWriter{open: make(chan struct{})}
	a := NewAudit(g, false)
	const n = 1000
	logged := make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			a.Log(AuditEvent{Event: "ack", RequestID: fmt.Sprint(i)})
		}
		close(logged)
	}()
	select {
	case <-logged:
	case <-time.After(10 * time.Second):
		t.Fatal("Log blocked behind a stalled writer")
	}
	close(g.open)
	a.Close()
	if got := len(auditLines(t, g.out.String())); got != n {
		t.Fatalf("%d lines, want %d", got, n)
	}
}

// Beyond the pending bound events are dropped and counted in one line.
func TestAuditDropsBeyondBound(t *testing.T) {
	g := &gateWriter{open: make(chan struct{})}
	a := newAudit(g, false, slog.Default())
	a.max = 1000 // bytes
	for i := 0; i < 100; i++ {
		a.Log(AuditEvent{Event: "ack", RequestID: fmt.Sprint(i)})
	}
	close(g.open)
	a.Close()
	kept, dropped := 0, 0
	for _, l := range auditLines(t, g.out.String()) {
		if l.Get("event").String() != "audit_dropped" {
			kept++
			continue
		}
		var n int
		if _, err := fmt.Sscanf(l.Get("detail").String(), "%d events dropped", &n); err != nil {
			t.Fatalf("audit_dropped detail: %s", l.Raw)
		}
		dropped += n
	}
	if kept == 0 || dropped == 0 || kept+dropped != 100 {
		t.Fatalf("%d kept + %d counted as dropped, want 100 with some of each:\n%s", kept, dropped, g.out.String())
	}
}

type failWriter struct{ calls atomic.Int32 }

func (f *failWriter) Write(p []byte) (int, error) {
	f.calls.Add(1)
	return 0, errors.New("disk full")
}

// A write error is logged once, then the audit goes quiet.
func TestAuditWriteErrorLoggedOnce(t *testing.T) {
	var logs syncBuffer
	fw := &failWriter{}
	a := newAudit(fw, false, slog.New(slog.NewJSONHandler(&logs, nil)))
	a.Log(AuditEvent{Event: "ack", RequestID: "1"})
	deadline := time.Now().Add(10 * time.Second)
	for fw.calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 50; i++ {
		a.Log(AuditEvent{Event: "ack", RequestID: fmt.Sprint(i)})
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v (a write error is not Close's)", err)
	}
	if got := fw.calls.Load(); got != 1 {
		t.Errorf("%d writes after a failure, want 1 (then quiet)", got)
	}
	if got := strings.Count(logs.String(), "\n"); got != 1 || !strings.Contains(logs.String(), "disk full") {
		t.Errorf("slog got %d lines, want one naming the error:\n%s", got, logs.String())
	}
}

func TestAuditNil(t *testing.T) {
	a, err := OpenAudit("", true)
	if a != nil || err != nil {
		t.Fatalf(`OpenAudit("") = %v, %v; want nil, nil`, a, err)
	}
	a.Log(AuditEvent{Event: "ack", RequestID: "1"}) // must not panic
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAuditAfterClose(t *testing.T) {
	var out syncBuffer
	a := NewAudit(&out, false)
	a.Close()
	a.Log(AuditEvent{Event: "ack", RequestID: "late"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "" {
		t.Fatalf("written after Close: %q", out.String())
	}
}

// OpenAudit appends to the file (mode 0600) and Close closes it.
func TestOpenAuditFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := 0; i < 2; i++ {
		a, err := OpenAudit(path, false)
		if err != nil {
			t.Fatal(err)
		}
		a.Log(AuditEvent{Event: "request", RequestID: fmt.Sprint("run-", i)})
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := auditLines(t, string(data))
	if len(lines) != 2 || lines[0].Get("request_id").String() != "run-0" || lines[1].Get("request_id").String() != "run-1" {
		t.Fatalf("file after two runs:\n%s", data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %o, want 600", fi.Mode().Perm())
	}
	if _, err := OpenAudit(filepath.Join(t.TempDir(), "no", "such", "dir", "a.jsonl"), false); err == nil {
		t.Error("OpenAudit in a missing directory succeeded")
	}
}
