package control

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/lane004"
)

// The bus itself is tested end to end (e2e/bus_test.go, real NATS
// servers); here, what needs no server: the flags, the names, and the
// lane and the event log over fakes of the store's two sides.

func TestBusConfigCheck(t *testing.T) {
	for _, c := range []struct {
		cfg  BusConfig
		want string // "" for none
	}{
		{BusConfig{}, ""},
		{BusConfig{URLs: "nats://a:4222,nats://b:4222", Creds: "x.creds", CA: "ca.pem", Cert: "c.pem", Key: "k.pem", Replicas: 3}, ""},
		{BusConfig{Creds: "x.creds"}, "go with --bus"},
		{BusConfig{Domain: "hub"}, "go with --bus"},
		{BusConfig{URLs: "nats://a", Cert: "c.pem"}, "--bus-cert and --bus-key go together"},
		{BusConfig{URLs: "nats://a", Key: "k.pem"}, "--bus-cert and --bus-key go together"},
		{BusConfig{URLs: "nats://a", Creds: "x", NKey: "y"}, "one or the other"},
		{BusConfig{URLs: "nats://a", Replicas: 7}, "want 1 to 5"},
	} {
		err := c.cfg.Check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want an error saying %q", c.cfg, err, c.want)
		}
	}
}

func TestBusRedacted(t *testing.T) {
	for in, want := range map[string]string{
		"nats://a:4222": "nats://a:4222",
		"nats://u:secret@a:4222,tls://v:s3@b:4222": "nats://u:xxxxx@a:4222,tls://v:xxxxx@b:4222",
		"nats://a-token@a:4222":                    "nats://xxxxx@a:4222",
		"nats://u:p%40ss@a:4222, nats://b:4222":    "nats://u:xxxxx@a:4222, nats://b:4222",
	} {
		if got := (BusConfig{URLs: in}).Redacted(); got != want {
			t.Errorf("%q redacted: %q, want %q", in, got, want)
		}
	}
}

func TestBusNames(t *testing.T) {
	for id, ok := range map[string]bool{"a": true, "desk-1_B": true, "": false, "a.b": false, "a*": false, "a>": false, "a b": false, strings.Repeat("x", 65): false} {
		if BusWorkerID(id) != ok {
			t.Errorf("BusWorkerID(%q) = %v", id, !ok)
		}
	}
	// Every request id makes one valid KV key and one subject token.
	kvKey := regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)
	for _, rid := range []string{"r1", "a.b", "*", ">", "a b", "ünïcode", "\x00", strings.Repeat("z", 300)} {
		k := busReceiptKey("w1", rid)
		if !kvKey.MatchString(k) || strings.Count(k, ".") != 1 {
			t.Errorf("request id %q: key %q", rid, k)
		}
		if s := busReceipt("w1", rid); strings.Count(s, ".") != 4 || strings.ContainsAny(s, "*> ") {
			t.Errorf("request id %q: subject %q", rid, s)
		}
	}
	if inst, ok := busClaim(busInFlight("p1")); !ok || inst != "p1" {
		t.Errorf("a claim in flight reads back as %q, %v", inst, ok)
	}
	if _, ok := busClaim([]byte(`{"event_type":"worker.response"}`)); ok {
		t.Error("a receipt reads as a claim in flight")
	}
	if busStream("w1") != "ccbridge_ev_w1" || busEvents("w1") != "ccbridge.ev.w1.e" {
		t.Errorf("names: %s %s", busStream("w1"), busEvents("w1"))
	}
	// The dedupe keys of lanes 000 and 001: valid keys of six tokens, the
	// worker's first, and no two requests alike whatever their fields
	// hold (a field's bytes never spill into the next).
	d := &busDedupe{worker: "w1"}
	seen := map[string]Key{}
	for _, k := range []Key{
		{Lane: "000", Team: "t", SessionID: "s", AgentID: "a", RequestID: "r"},
		{Lane: "000", Team: "t.s", AgentID: "a", RequestID: "r"},
		{Lane: "000", Team: "t", SessionID: ".s", AgentID: "a", RequestID: "r"},
		{Lane: "001", RequestID: "r"},
		{Lane: "001", RequestID: ""},
		{Lane: "000", Team: "*", SessionID: ">", AgentID: "a b", RequestID: "ünï\x00"},
		{Lane: "000", RequestID: strings.Repeat("z", 256)},
	} {
		key := d.key(k)
		if !kvKey.MatchString(key) || strings.Count(key, ".") != 5 || !strings.HasPrefix(key, "w1._") || strings.Contains(key, "..") {
			t.Errorf("%+v: key %q", k, key)
		}
		if prev, ok := seen[key]; ok {
			t.Errorf("%+v and %+v: one key %q", prev, k, key)
		}
		seen[key] = k
	}
	// Teams and agent ids name subject tokens as they are: the seed's
	// "codex:abc123" among them.
	for tok, ok := range map[string]bool{"team-e2e": true, "codex:abc123": true, "ünï": true, "a/b=c": true,
		"": false, "a.b": false, "a*": false, "a>": false, "a b": false, "a\tb": false, "a\x7f": false, strings.Repeat("x", 129): false} {
		if busSubjectToken(tok) != ok {
			t.Errorf("busSubjectToken(%q) = %v", tok, !ok)
		}
	}
	if k := busCtlKey("codex:abc123", "t.1"); !kvKey.MatchString(k) || BusWorkerID(k) || strings.Count(k, ".") != 2 {
		t.Errorf("a team and agent's presence key %q", k)
	}
	if busRunKey("run.1") == busRunKey("run_1") || !kvKey.MatchString(busRunKey("a b.c")) {
		t.Errorf("run keys: %q %q", busRunKey("run.1"), busRunKey("a b.c"))
	}
}

func TestBusOutcome(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 123456789, time.UTC)
	o := Outcome{Result: "ok", Detail: "took \"it\"\n", At: at}
	if got, ok := decodeBusOutcome(encodeBusOutcome(o)); !ok || got != o {
		t.Errorf("an outcome reads back as %+v, %v", got, ok)
	}
	for _, bad := range []string{"", "\x00p1", `{"result":"ok"}`, `{"result":"ok","at":"yesterday"}`, `{`} {
		if _, ok := decodeBusOutcome([]byte(bad)); ok {
			t.Errorf("%q reads as an outcome", bad)
		}
	}
}

// downStore is a store whose bus is lost: Begin fails as busStore's does.
type downStore struct{ Store }

func (downStore) Begin(Key, time.Time) (Entry, bool, error) {
	return Entry{}, false, fmt.Errorf("%w (nats: connection closed)", ErrBusDown)
}

func TestLane004BusDown(t *testing.T) {
	e := newL4Env(t, downStore{NewMemoryStore(StoreConfig{})}, nil)
	r, fresh, _ := e.lane.Request(l4Req("r1", "thread/list", ""), nil)
	p := gjson.ParseBytes(r)
	if fresh || p.Get("payload.code").Str != lane004.CodeWorkerUnavailable || p.Get("seq").Exists() ||
		!strings.Contains(p.Get("payload.message").Str, "lost the bus") || p.Get("payload.request_id").Str != "r1" {
		t.Errorf("a request while the bus is lost: fresh %v, %s", fresh, r)
	}
	if got := e.target.called(); len(got) != 0 {
		t.Errorf("the worker ran %v", got)
	}
	if n := len(l4Lines(e.log)); n != 0 {
		t.Errorf("%d lines in the log", n)
	}
}

// partialStore is a store with an event journal whose appends publish
// every line and then fail to finish the receipt's entry, as the bus's
// do when the bus goes between the stream and the bucket.
type partialStore struct {
	Store
	lines  []logEntry
	latest uint64
	failFn bool
}

func (s *partialStore) keepsEvents() bool { return true }
func (s *partialStore) loadEvents(int) ([]logEntry, uint64, error) {
	return nil, 0, nil
}
func (s *partialStore) committed() uint64 { return s.latest }
func (s *partialStore) appendEvents(lines []logEntry, _ int, fin *receiptFinish) error {
	for _, e := range lines {
		if e.seq > s.latest {
			s.lines = append(s.lines, e)
			s.latest = e.seq
		}
	}
	if fin != nil && s.failFn {
		return errors.New("the receipts bucket: timeout")
	}
	if fin != nil {
		return s.Finish(fin.key, fin.o)
	}
	return nil
}

func TestEventLogReceiptPublishedEntryNot(t *testing.T) {
	s := &partialStore{Store: NewMemoryStore(StoreConfig{}), failFn: true}
	l, err := OpenEventLog(EventLogConfig{Store: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	k := Key{Lane: "004", AgentID: l4Worker, RequestID: "r1"}
	if _, fresh, err := s.Begin(k, l4Now); !fresh || err != nil {
		t.Fatal(fresh, err)
	}
	line, err := l.AppendReceipt(s, k, "ok", l4Now, func(seq uint64) []byte {
		return lane004.AppendResponse(nil, l4Worker, seq, "r1", "thread/list", `{}`, l4Now)
	})
	if err == nil || line != nil {
		t.Fatalf("AppendReceipt: %s, %v; want the entry's error", line, err)
	}
	// The receipt is in the journal: it is shown, and its seq is not
	// given again.
	if got := l4Lines(l); len(got) != 1 || gjson.GetBytes(got[0], "seq").Uint() != 1 {
		t.Fatalf("the log after a receipt published, its entry not finished: %q", got)
	}
	s.failFn = false
	next := l4Event(l, 2)
	if seq := gjson.GetBytes(next, "seq").Uint(); seq != 2 {
		t.Errorf("the next event took seq %d, want 2", seq)
	}
}

// slowStore is a store whose Begin of one request id waits for a gate,
// as a store on the bus waits for its round trips.
type slowStore struct {
	Store
	slowID string
	gate   chan struct{}
	begun  chan string
}

func (s *slowStore) Begin(k Key, now time.Time) (Entry, bool, error) {
	s.begun <- k.RequestID
	if k.RequestID == s.slowID {
		<-s.gate
	}
	return s.Store.Begin(k, now)
}

// TestLane004StoreOutsideLock: a store that is slow for one request id
// holds up neither the requests of other ids nor a duplicate's answer,
// which is the first request's.
func TestLane004StoreOutsideLock(t *testing.T) {
	s := &slowStore{Store: NewMemoryStore(StoreConfig{}), slowID: "slow", gate: make(chan struct{}), begun: make(chan string, 8)}
	e := newL4Env(t, s, nil)
	var once sync.Once
	open := func() { once.Do(func() { close(s.gate) }) }
	t.Cleanup(open)
	slow := make(chan []byte, 2)
	go func() { r, _, _ := e.lane.Request(l4Req("slow", "thread/list", ""), nil); slow <- r }()
	if id := <-s.begun; id != "slow" {
		t.Fatalf("begun %q", id)
	}
	dup := make(chan []byte, 1)
	go func() { r, _, _ := e.lane.Request(l4Req("slow", "thread/list", ""), nil); dup <- r }()
	done := make(chan []byte, 1)
	go func() { r, _, _ := e.lane.Request(l4Req("other", "thread/list", ""), nil); done <- r }()
	select {
	case r := <-done:
		if gjson.GetBytes(r, "payload.request_id").Str != "other" || gjson.GetBytes(r, "seq").Uint() != 1 {
			t.Errorf("the other request's receipt: %s", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a request of another id waited for the slow store")
	}
	select {
	case r := <-dup:
		t.Fatalf("the duplicate answered before the first: %s", r)
	default:
	}
	open()
	first, second := <-slow, <-dup
	if !bytes.Equal(first, second) || gjson.GetBytes(first, "seq").Uint() != 2 {
		t.Errorf("the first and its duplicate:\n%s\n%s", first, second)
	}
	if calls := e.target.called(); len(calls) != 2 {
		t.Errorf("Do ran %q, want once for each id", calls)
	}
}

// TestOpenBusRefusals: what --bus cannot go with is refused before the
// bus is dialled, each saying why.
func TestOpenBusRefusals(t *testing.T) {
	type worker struct {
		Target
		*l4Target
	}
	w := worker{nil, newL4Target(t, nil)}
	bus := BusConfig{URLs: "nats://127.0.0.1:1"}
	for _, c := range []struct {
		cfg    Config
		target Target
		want   string
	}{
		{Config{Bus: bus, StateDir: t.TempDir()}, w, "--state-dir and --bus"},
		{Config{Bus: bus}, nil, "--bus without lane 004"},
		{Config{Bus: bus, Team: "t"}, nil, "give --team and --agent-id"},
		{Config{Bus: bus, Team: "team.a"}, w, `--team "team.a": with --bus it names a subject`},
		{Config{Bus: bus, Team: "t", AgentID: "a*"}, w, `--agent-id "a*"`},
		{Config{Bus: bus, Team: "t", AgentID: "a b"}, w, `--agent-id "a b"`},
		{Config{Bus: bus, WorkerID: "w.1"}, w, `--worker-id "w.1"`},
	} {
		cp, err := Open(c.cfg, 0, nil, c.target, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error saying %q", c.cfg, err, c.want)
		}
		cp.Close()
	}
}
