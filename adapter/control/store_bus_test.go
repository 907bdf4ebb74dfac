package control

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/lane004"
)

// The bus's lane-004 store over fakes of what it calls: the receipts
// bucket and one worker's stream, in memory. No NATS server: it is a
// test fixture of e2e alone (deps_test.go), which runs the bus end to
// end.

// fakeJS makes one worker's stream.
type fakeJS struct {
	jetstream.JetStream
	st *fakeStream
}

func (f *fakeJS) CreateOrUpdateStream(_ context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	f.st.max = int(cfg.MaxMsgs)
	f.st.trim()
	return f.st, nil
}

// fakeStream is a stream of at most max messages, the oldest dropped.
type fakeStream struct {
	jetstream.Stream
	mu   sync.Mutex
	max  int
	seq  uint64
	msgs []jetstream.RawStreamMsg // oldest first
}

func (f *fakeStream) trim() {
	if f.max > 0 && len(f.msgs) > f.max {
		f.msgs = slices.Clone(f.msgs[len(f.msgs)-f.max:])
	}
}

// add publishes data on subject.
func (f *fakeStream) add(subject string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	f.msgs = append(f.msgs, jetstream.RawStreamMsg{Subject: subject, Sequence: f.seq, Data: data, Time: l4Now})
	f.trim()
}

// Info gives every subject the stream holds: the filter is not read
// (the caller keeps the subjects it wants).
func (f *fakeStream) Info(context.Context, ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info := &jetstream.StreamInfo{State: jetstream.StreamState{Msgs: uint64(len(f.msgs)), LastSeq: f.seq, Subjects: map[string]uint64{}}}
	for _, m := range f.msgs {
		info.State.Subjects[m.Subject]++
	}
	if len(f.msgs) > 0 {
		info.State.FirstSeq = f.msgs[0].Sequence
	}
	return info, nil
}

func (f *fakeStream) GetLastMsgForSubject(_ context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.msgs) - 1; i >= 0; i-- {
		if f.msgs[i].Subject == subject {
			m := f.msgs[i]
			return &m, nil
		}
	}
	return nil, jetstream.ErrMsgNotFound
}

// fakeKV is a bucket of history 1: Create wins once, Update wants the
// key's revision; revisions are one sequence, as a bucket's stream's.
type fakeKV struct {
	jetstream.KeyValue
	mu  sync.Mutex
	rev uint64
	m   map[string]*fakeEntry
}

type fakeEntry struct {
	jetstream.KeyValueEntry
	key   string
	value []byte
	rev   uint64
}

func (e *fakeEntry) Key() string        { return e.key }
func (e *fakeEntry) Value() []byte      { return e.value }
func (e *fakeEntry) Revision() uint64   { return e.rev }
func (e *fakeEntry) Created() time.Time { return l4Now }

func (f *fakeKV) put(key string, value []byte) uint64 {
	if f.m == nil {
		f.m = make(map[string]*fakeEntry)
	}
	f.rev++
	f.m[key] = &fakeEntry{key: key, value: bytes.Clone(value), rev: f.rev}
	return f.rev
}

func (f *fakeKV) Create(_ context.Context, key string, value []byte, _ ...jetstream.KVCreateOpt) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[key]; ok {
		return 0, jetstream.ErrKeyExists
	}
	return f.put(key, value), nil
}

func (f *fakeKV) Update(_ context.Context, key string, value []byte, rev uint64) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[key]; !ok || e.rev != rev {
		return 0, jetstream.ErrKeyRevisionMismatch
	}
	return f.put(key, value), nil
}

func (f *fakeKV) Get(_ context.Context, key string) (jetstream.KeyValueEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.m[key]
	if !ok {
		return nil, jetstream.ErrKeyNotFound
	}
	c := *e
	return &c, nil
}

// get is key's value and revision.
func (f *fakeKV) get(key string) ([]byte, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.m[key]; ok {
		return e.value, e.rev
	}
	return nil, 0
}

// TestBusStoreSettlesLeftClaimsAtStart: a worker killed between a
// receipt's publish and its write-over leaves the claim in flight and the
// receipt in its stream. The next start writes that receipt over the
// claim, so that a retry still gets it once the stream has dropped the
// line (more than --retain-events lines later), not internal_error. A
// claim whose request was never answered (no receipt in the stream)
// stays in flight, answered once with internal_error as before; a
// receipt already written over is left as it is.
func TestBusStoreSettlesLeftClaimsAtStart(t *testing.T) {
	const retain = 4
	st, kv := &fakeStream{}, &fakeKV{}
	b := &Bus{js: &fakeJS{st: st}, receipts: kv, log: slog.New(slog.DiscardHandler), refused: make(chan struct{}, 1)}
	key := func(id string) Key { return Key{Lane: laneID004, AgentID: l4Worker, RequestID: id} }
	receipt := func(seq uint64, id string) []byte {
		return lane004.AppendResponse(nil, l4Worker, seq, id, "thread/list", `{"data":[],"nextCursor":null}`, l4Now)
	}

	// The run that is killed: r0 answered and written over, r1 answered
	// (its receipt in the stream) and not yet written over, r2 claimed and
	// never answered.
	s1, err := openBusStore(b, l4Worker, retain)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r0", "r1", "r2"} {
		if _, fresh, err := s1.Begin(key(id), l4Now); !fresh || err != nil {
			t.Fatalf("claim %s: fresh %v, %v", id, fresh, err)
		}
	}
	r0, r1 := receipt(1, "r0"), receipt(2, "r1")
	st.add(busReceipt(l4Worker, "r0"), r0)
	if err := s1.Finish(key("r0"), Outcome{Result: "ok", Detail: string(r0)}); err != nil {
		t.Fatal(err)
	}
	st.add(busReceipt(l4Worker, "r1"), r1)
	_, r0rev := kv.get(busReceiptKey(l4Worker, "r0"))
	_, r1claim := kv.get(busReceiptKey(l4Worker, "r1"))

	// The next start, then more lines than the stream keeps: r1's goes.
	s2, err := openBusStore(b, l4Worker, retain)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for i := range retain {
		st.add(busEvents(l4Worker), lane004.AppendEvent(nil, l4Worker, uint64(3+i), "item/agentMessage/delta", `{}`, l4Now))
	}
	if m, _ := st.GetLastMsgForSubject(context.Background(), busReceipt(l4Worker, "r1")); m != nil {
		t.Fatal("the stream still holds r1's receipt")
	}
	if v, rev := kv.get(busReceiptKey(l4Worker, "r0")); rev != r0rev || !bytes.Equal(v, r0) {
		t.Errorf("r0's receipt, written over before the start, was written again: revision %d, want %d", rev, r0rev)
	}
	if v, _ := kv.get(busReceiptKey(l4Worker, "r2")); !bytes.HasPrefix(v, []byte{0}) {
		t.Errorf("r2, never answered, is no longer in flight after the start: %q", v)
	}
	if v, _ := kv.get(busReceiptKey(l4Worker, "r1")); !bytes.Equal(v, r1) {
		t.Errorf("r1's claim after the start: %q, want its receipt from the stream", v)
	}

	e := newL4Env(t, s2, nil)
	got, fresh, _ := e.lane.Request(l4Req("r1", "thread/list", ""), nil)
	if fresh || !bytes.Equal(got, r1) {
		t.Errorf("a retry of r1 after the start and %d more lines: fresh %v,\n%s\nwant the receipt it was answered with,\n%s", retain, fresh, got, r1)
	}
	first, fresh, _ := e.lane.Request(l4Req("r2", "thread/list", ""), nil)
	p := gjson.ParseBytes(first)
	if !fresh || p.Get("payload.code").Str != lane004.CodeInternalError || !strings.Contains(p.Get("payload.message").Str, "in flight when ccbridge stopped") {
		t.Errorf("the first retry of r2, left in flight unanswered: fresh %v, %s", fresh, first)
	}
	if again, fresh, _ := e.lane.Request(l4Req("r2", "thread/list", ""), nil); fresh || !bytes.Equal(again, first) {
		t.Errorf("the second retry of r2: fresh %v,\n%s\nwant the first's\n%s", fresh, again, first)
	}
	if calls := e.target.called(); len(calls) != 0 {
		t.Errorf("the worker ran %q", calls)
	}
	// A write-over with the claim's revision, once the claim is settled,
	// is refused and leaves the receipt as it is.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if written, err := s2.writeOver(ctx, busReceiptKey(l4Worker, "r1"), []byte("other"), r1claim); written || err != nil {
		t.Errorf("a write-over of a settled claim: written %v, %v", written, err)
	}
	s1.Close()
}
