package control

import (
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// AuditEvent is one entry of the audit trail.
type AuditEvent struct {
	Event                                       string // "request", "ack", "duplicate", "retry", "failure", "timeout", "warning"
	RequestID, Team, SessionID, AgentID, Sender string
	Lane                                        string
	Result                                      string
	Duplicate                                   bool
	Detail                                      string
	Payload                                     []byte // written only when the audit was opened with payloads
}

// Audit writes the audit trail as JSON lines, one per event:
//
//	{"time":"2026-02-20T21:15:00.123456789Z","event":"ack","request_id":"…","team":"…",
//	 "session_id":"…","agent_id":"…","sender":"…","lane":"000","result":"ok",
//	 "duplicate":false,"detail":"…"}
//
// plus "payload" (a JSON string, invalid UTF-8 replaced by U+FFFD) when
// opened with payloads and the event has one. Every field but payload is
// always present, empty when unknown.
//
// Log only appends the line to a buffer in memory; one goroutine writes
// the buffer out, so a slow file or a stalled stderr does not hold up the
// lanes. The buffer is bounded (auditMaxPending): beyond it events are
// counted and dropped, and an "audit_dropped" line says how many once the
// writer catches up. The first write error is logged through slog and the
// audit goes quiet after it: the lanes go on.
//
// A nil *Audit is valid and does nothing. Safe for concurrent use.
type Audit struct {
	payloads bool
	w        io.Writer
	c        io.Closer // the file OpenAudit opened; nil otherwise
	log      *slog.Logger
	max      int // bytes pending beyond which events are dropped

	mu      sync.Mutex
	buf     []byte // lines not yet written
	dropped int
	closed  bool

	wake chan struct{} // capacity 1: "buf has lines"
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer has drained and ended
}

// auditMaxPending bounds the bytes waiting for the writer.
const auditMaxPending = 8 << 20

// OpenAudit opens the audit trail named by --audit-log: "" is off (a nil
// *Audit), "-" is stderr, anything else a file opened for appending
// (created with mode 0600).
func OpenAudit(path string, payloads bool) (*Audit, error) {
	switch path {
	case "":
		return nil, nil
	case "-":
		return NewAudit(os.Stderr, payloads), nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	a := newAudit(f, payloads, slog.Default())
	a.c = f
	return a, nil
}

// NewAudit returns an Audit writing to w; Close does not close w.
func NewAudit(w io.Writer, payloads bool) *Audit {
	return newAudit(w, payloads, slog.Default())
}

func newAudit(w io.Writer, payloads bool, log *slog.Logger) *Audit {
	a := &Audit{
		payloads: payloads,
		w:        w,
		log:      log,
		max:      auditMaxPending,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go a.writer()
	return a
}

// Log records ev with the current time. It never blocks on the writer.
func (a *Audit) Log(ev AuditEvent) {
	if a == nil {
		return
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	if len(a.buf) >= a.max {
		a.dropped++
		a.mu.Unlock()
		return
	}
	a.buf = a.appendEvent(a.buf, &ev, time.Now())
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Close writes what is pending, stops the writer and closes the file
// OpenAudit opened. Later Logs do nothing.
func (a *Audit) Close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	close(a.stop)
	<-a.done
	if a.c != nil {
		return a.c.Close()
	}
	return nil
}

// writer owns w: it swaps the pending buffer for its spare one and writes.
func (a *Audit) writer() {
	defer close(a.done)
	var spare []byte
	failed := false
	for {
		stopping := false
		select {
		case <-a.wake:
		case <-a.stop:
			stopping = true
		}
		a.mu.Lock()
		out := a.buf
		a.buf = spare[:0]
		dropped := a.dropped
		a.dropped = 0
		a.mu.Unlock()
		if dropped > 0 {
			out = a.appendEvent(out, &AuditEvent{
				Event:  "audit_dropped",
				Detail: strconv.Itoa(dropped) + " events dropped: the audit writer fell behind",
			}, time.Now())
		}
		if len(out) > 0 && !failed {
			if _, err := a.w.Write(out); err != nil {
				failed = true
				a.log.Error("audit log: write failed; further audit events are dropped", "err", err)
			}
		}
		if cap(out) > 1<<20 {
			out = nil // do not keep a burst's buffer for ever
		}
		spare = out
		if stopping {
			return
		}
	}
}

func (a *Audit) appendEvent(b []byte, ev *AuditEvent, now time.Time) []byte {
	b = append(b, `{"time":"`...)
	b = now.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","event":`...)
	b = gjson.AppendJSONString(b, ev.Event)
	b = append(b, `,"request_id":`...)
	b = gjson.AppendJSONString(b, ev.RequestID)
	b = append(b, `,"team":`...)
	b = gjson.AppendJSONString(b, ev.Team)
	b = append(b, `,"session_id":`...)
	b = gjson.AppendJSONString(b, ev.SessionID)
	b = append(b, `,"agent_id":`...)
	b = gjson.AppendJSONString(b, ev.AgentID)
	b = append(b, `,"sender":`...)
	b = gjson.AppendJSONString(b, ev.Sender)
	b = append(b, `,"lane":`...)
	b = gjson.AppendJSONString(b, ev.Lane)
	b = append(b, `,"result":`...)
	b = gjson.AppendJSONString(b, ev.Result)
	b = append(b, `,"duplicate":`...)
	b = strconv.AppendBool(b, ev.Duplicate)
	b = append(b, `,"detail":`...)
	b = gjson.AppendJSONString(b, ev.Detail)
	if a.payloads && ev.Payload != nil {
		b = append(b, `,"payload":`...)
		// The string only lives for the call: AppendJSONString copies it.
		b = gjson.AppendJSONString(b, unsafe.String(unsafe.SliceData(ev.Payload), len(ev.Payload)))
	}
	return append(b, '}', '\n')
}
