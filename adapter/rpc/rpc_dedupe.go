package rpc

import "time"

// The dedupe store: a request id the UI used is remembered for a window,
// with its method, its params and, once sent, its answer. A retry (same
// id, method and params) gets that answer again and does nothing else; an
// id reused for another request within the window is refused. Only
// methods with side effects keep their answers (run.start, run.cancel,
// model.set, shell.exec); a retried query simply runs again.

const (
	dedupeMaxEntries = 1024
	dedupeMaxBytes   = 32 << 20 // answers kept, in total
)

type dedupeState uint8

const (
	dedupeNew      dedupeState = iota // not seen: handle it
	dedupeReplay                      // answered before: send the answer again
	dedupeInFlight                    // still being handled: its answer will come
	dedupeConflict                    // the id names another request
)

type dedupeEntry struct {
	id, method, params string
	at                 time.Time
	keep               bool   // keep the answer for retries
	answer             []byte // nil until answered
}

type rpcDedupe struct {
	window  time.Duration
	entries map[string]*dedupeEntry
	order   []*dedupeEntry // oldest first
	bytes   int
}

func newRPCDedupe(window time.Duration) *rpcDedupe {
	return &rpcDedupe{window: window, entries: make(map[string]*dedupeEntry)}
}

// begin looks the request up and, when it is new, records it. keep says
// whether its answer is kept for retries.
func (d *rpcDedupe) begin(id, method, params string, keep bool, now time.Time) ([]byte, dedupeState) {
	d.expire(now)
	if e, ok := d.entries[id]; ok {
		switch {
		case e.method != method || e.params != params:
			return nil, dedupeConflict
		case !e.keep:
			// A query: run it again.
			return nil, dedupeNew
		case e.answer != nil:
			return e.answer, dedupeReplay
		default:
			return nil, dedupeInFlight
		}
	}
	e := &dedupeEntry{id: id, method: method, params: params, at: now, keep: keep}
	d.entries[id] = e
	d.order = append(d.order, e)
	d.bytes += len(id) + len(method) + len(params)
	d.trim()
	return nil, dedupeNew
}

// answer records the answer sent for id.
func (d *rpcDedupe) answer(id string, line []byte) {
	e, ok := d.entries[id]
	if !ok || !e.keep || e.answer != nil {
		return
	}
	e.answer = line
	d.bytes += len(line)
	d.trim()
}

// trim drops the oldest entries beyond the limits.
func (d *rpcDedupe) trim() {
	for len(d.order) > 0 && (len(d.order) > dedupeMaxEntries || d.bytes > dedupeMaxBytes) {
		d.drop()
	}
}

func (d *rpcDedupe) drop() {
	e := d.order[0]
	d.order[0] = nil
	d.order = d.order[1:]
	d.bytes -= len(e.id) + len(e.method) + len(e.params) + len(e.answer)
	if d.entries[e.id] == e {
		delete(d.entries, e.id)
	}
}

// expire forgets entries older than the window.
func (d *rpcDedupe) expire(now time.Time) {
	for len(d.order) > 0 && now.Sub(d.order[0].at) >= d.window {
		d.drop()
	}
}

// nextExpiry is when the oldest entry expires, zero when there is none.
func (d *rpcDedupe) nextExpiry() time.Time {
	if len(d.order) == 0 {
		return time.Time{}
	}
	return d.order[0].at.Add(d.window)
}
