package control

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// busStore is lane 004's Store and event journal on the bus (bus.go):
// Begin claims a request in the receipts bucket by Create, which one
// writer wins, a second gets the key's value; the receipt is published
// in the worker's stream and then written over the claim by Update with
// the claim's revision. A claim found in flight is settled from the
// stream when its receipt is there (a process that stopped between the
// two writes: at start, openBusStore settles every such claim while the
// stream still holds its receipt), else counts as in flight when this
// process made it (its receipt could not be recorded) or as left by a
// process that stopped (Lane004 answers both with internal_error, once).
//
// Keys never expire: TTL and MaxKeys do not apply (the bucket's own
// limits do). Release deletes the claim.
type busStore struct {
	b        *Bus
	worker   string
	instance string
	st       jetstream.Stream
	events   string // the events' subject
	name     string // the stream's name

	finishing sync.WaitGroup // claims being written over (settleLater)

	pmu     sync.Mutex
	pending []busSettle // receipts published, their claims not yet written over

	mu     sync.Mutex
	held   busClaims[uint64] // the claims this process holds: their revisions
	latest uint64            // the last seq in the stream
	closed bool
}

// openBusStore opens worker's receipts and stream, its stream keeping
// retain events, and settles the claims a stopped process of the worker
// left in flight with their receipts in the stream (settleLeft).
func openBusStore(b *Bus, worker string, retain int) (*busStore, error) {
	if err := checkBusWorker(worker); err != nil {
		return nil, err
	}
	ctx, cancel := b.setupCtx()
	defer cancel()
	st, err := b.stream(ctx, worker, retain)
	if err != nil {
		return nil, fmt.Errorf("--bus: worker %s's stream: %w", worker, b.withRefusal(err))
	}
	s := &busStore{b: b, worker: worker, instance: nuid.Next(), st: st, events: busEvents(worker), name: busStream(worker)}
	n, err := s.settleLeft()
	if err != nil {
		return nil, fmt.Errorf("--bus: worker %s's claims left in flight: %w", worker, b.withRefusal(err))
	}
	if n > 0 {
		b.log.Info("bus: claims the last run left in flight written over with their receipts from the stream", "worker", worker, "claims", n)
	}
	return s, nil
}

// busSettleLeftAtOnce bounds the receipts settleLeft looks up at once.
const busSettleLeftAtOnce = 64

// settleLeft writes each claim left in flight whose receipt the stream
// holds over with that receipt: a process of this worker stopped
// between the receipt's publish and its write-over (settleLater). Found
// by a retry, such a claim is settled from the stream (settle), but only
// while the stream keeps the line: --retain-events lines later the
// retry would get internal_error, not the receipt its request was
// answered with. So it runs at start, before the event log reads the
// stream and before any request: nothing is published meanwhile (the
// worker is its stream's only writer), so every receipt of such a claim
// is still there. It publishes nothing (no seq is taken) and answers
// nothing: a claim whose receipt is not in the stream (its request was
// never answered) stays in flight, answered once with internal_error by
// the lane as before (settle). Update with the claim's revision: a claim
// written meanwhile is left as it is.
//
// The stream's receipts bound the work (--retain-events at most), not
// the worker's keys in the bucket, which never expire: one read of the
// stream's receipt subjects, then one read of the bucket for each,
// busSettleLeftAtOnce at once, and for each claim in flight the receipt's
// line and the write. n is how many were written over.
func (s *busStore) settleLeft() (n int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*busTimeout)
	defer cancel()
	pf := busEvPf + s.worker + ".r."
	info, err := s.st.Info(ctx, jetstream.WithSubjectFilter(pf+">"))
	if err != nil {
		return 0, s.b.busErr(err)
	}
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, busSettleLeftAtOnce)
		mu    sync.Mutex
	)
	for subject := range info.State.Subjects {
		part, ok := strings.CutPrefix(subject, pf)
		if !ok || strings.Contains(part, ".") {
			continue
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			written, e := s.settleLeftOne(s.worker+"."+part, subject)
			mu.Lock()
			defer mu.Unlock()
			if written {
				n++
			}
			if err == nil {
				err = e
			}
		}()
	}
	wg.Wait()
	return n, err
}

// settleLeftOne writes key's claim over with the receipt on subject when
// the claim is in flight.
func (s *busStore) settleLeftOne(key, subject string) (bool, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	e, err := s.b.receipts.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return false, nil
	case err != nil:
		return false, s.b.busErr(err)
	}
	if _, inFlight := busClaim(e.Value()); !inFlight {
		return false, nil
	}
	m, err := s.st.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	case err != nil:
		return false, s.b.busErr(err)
	}
	return s.writeOver(ctx, key, m.Data, e.Revision())
}

// writeOver writes a receipt from the stream over its claim, by Update
// with the claim's revision: a claim written meanwhile (settled by
// someone else first) is left as it is, and written is false.
func (s *busStore) writeOver(ctx context.Context, key string, receipt []byte, rev uint64) (written bool, err error) {
	_, err = s.b.receipts.Update(ctx, key, receipt, rev)
	switch {
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return false, nil
	case err != nil:
		return false, s.b.busErr(err)
	}
	return true, nil
}

func (s *busStore) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), busTimeout)
}

func (s *busStore) Begin(k Key, now time.Time) (Entry, bool, error) {
	key := busReceiptKey(s.worker, k.RequestID)
	ctx, cancel := s.ctx()
	defer cancel()
	rev, e, err := s.b.claim(ctx, s.b.receipts, key, busInFlight(s.instance))
	switch {
	case err != nil:
		return Entry{}, false, err
	case e == nil:
		s.held.hold(key, rev)
		return Entry{}, true, nil
	}
	return s.settle(ctx, key, k.RequestID, e)
}

// errClaimChanged: a key was claimed and released three times over while
// it was read.
var errClaimChanged = errors.New("control store: the request's claim changed three times while it was read")

// claim claims key in kv with the value v by Create, which one writer
// wins: its revision, or, when the key is held, the entry that holds it
// (a key released meanwhile is claimed again).
func (b *Bus) claim(ctx context.Context, kv jetstream.KeyValue, key string, v []byte) (uint64, jetstream.KeyValueEntry, error) {
	for range 3 {
		rev, err := kv.Create(ctx, key, v)
		if err == nil {
			return rev, nil, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return 0, nil, b.busErr(err)
		}
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return 0, nil, b.busErr(err)
		}
		return 0, e, nil
	}
	return 0, nil, errClaimChanged
}

// settle reads a claim someone holds: a receipt, or a claim in flight,
// which the stream may settle.
func (s *busStore) settle(ctx context.Context, key, requestID string, e jetstream.KeyValueEntry) (Entry, bool, error) {
	owner, inFlight := busClaim(e.Value())
	if !inFlight {
		return Entry{Outcome: Outcome{Detail: string(e.Value()), At: e.Created()}, Since: e.Created()}, false, nil
	}
	m, err := s.st.GetLastMsgForSubject(ctx, busReceipt(s.worker, requestID))
	switch {
	case err == nil:
		// Published, not yet written over its claim: finish the claim.
		if _, err := s.writeOver(ctx, key, m.Data, e.Revision()); err != nil {
			return Entry{}, false, err
		}
		s.held.drop(key)
		return Entry{Outcome: Outcome{Detail: string(m.Data), At: m.Time}, Since: m.Time}, false, nil
	case !errors.Is(err, jetstream.ErrMsgNotFound):
		return Entry{}, false, s.b.busErr(err)
	}
	s.held.hold(key, e.Revision())
	if owner == s.instance {
		return Entry{InFlight: true, Since: e.Created()}, false, nil
	}
	// Left by a process that stopped: not a receipt line, so the lane
	// answers it once with internal_error.
	return Entry{Outcome: Outcome{Result: "in_flight_at_stop"}, Since: e.Created()}, false, nil
}

// busClaims are the claims a process holds on the bus, by key, with
// what it keeps of each. Safe for concurrent use.
type busClaims[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (c *busClaims[V]) hold(key string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]V)
	}
	c.m[key] = v
}

func (c *busClaims[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

func (c *busClaims[V]) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// Finish writes the receipt over the claim this process holds.
func (s *busStore) Finish(k Key, o Outcome) error {
	key := busReceiptKey(s.worker, k.RequestID)
	rev, ok := s.held.get(key)
	if !ok {
		return ErrNoEntry
	}
	ctx, cancel := s.ctx()
	defer cancel()
	if _, err := s.b.receipts.Update(ctx, key, []byte(o.Detail), rev); err != nil {
		return s.b.busErr(err)
	}
	s.held.drop(key)
	return nil
}

func (s *busStore) Release(k Key) error {
	key := busReceiptKey(s.worker, k.RequestID)
	ctx, cancel := s.ctx()
	defer cancel()
	rev, ok := s.held.get(key)
	if !ok {
		return nil
	}
	s.held.drop(key)
	return s.b.busErr(s.b.receipts.Delete(ctx, key, jetstream.LastRevision(rev)))
}

func (s *busStore) NextSeq(string) (uint64, error) {
	return 0, errors.New("control store: the bus keeps lane 004 only")
}

func (s *busStore) Durable() bool { return true }

// Close waits for the claims being written over and forgets the rest;
// the bus is its owner's to close.
func (s *busStore) Close() error {
	s.finishing.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// The event journal (eventJournal).

func (s *busStore) keepsEvents() bool { return true }

// loadEvents reads the stream's last n lines.
func (s *busStore) loadEvents(n int) ([]logEntry, uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*busTimeout)
	defer cancel()
	info, err := s.st.Info(ctx)
	if err != nil {
		return nil, 0, s.b.busErr(err)
	}
	last := info.State.LastSeq
	s.mu.Lock()
	s.latest = last
	s.mu.Unlock()
	if info.State.Msgs == 0 || n <= 0 {
		return nil, last, nil
	}
	from := info.State.FirstSeq
	if last >= uint64(n) && last-uint64(n)+1 > from {
		from = last - uint64(n) + 1
	}
	c, err := s.st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from})
	if err != nil {
		return nil, 0, s.b.busErr(err)
	}
	var lines []logEntry
	for {
		batch, err := c.Fetch(256, jetstream.FetchMaxWait(busTimeout))
		if err != nil {
			return nil, 0, s.b.busErr(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return nil, 0, err
			}
			lines = append(lines, logEntry{md.Sequence.Stream, bytes.Clone(m.Data())})
			if md.Sequence.Stream >= last {
				return lines, last, nil
			}
		}
		if err := batch.Error(); err != nil {
			return nil, 0, s.b.busErr(err)
		}
		if got == 0 {
			return lines, last, nil
		}
	}
}

// committed is the last seq in the stream (partialJournal): a receipt
// published whose claim could not be written is not given again.
func (s *busStore) committed() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}

// appendEvents publishes lines in seq order, each expecting the one
// before it (so that its seq is its stream sequence), skipping those an
// earlier call published; with fin, the last line is a receipt, then
// written over its claim. keep is the stream's own MaxMsgs.
func (s *busStore) appendEvents(lines []logEntry, _ int, fin *receiptFinish) error {
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	for i, e := range lines {
		if e.seq <= s.committed() {
			continue
		}
		subject := s.events
		if fin != nil && i == len(lines)-1 {
			subject = busReceipt(s.worker, fin.key.RequestID)
		}
		if err := s.publish(ctx, subject, e); err != nil {
			return err
		}
	}
	if fin == nil {
		return nil
	}
	// The receipt is in the stream, which settles its claim for anyone
	// who finds the claim still in flight (Begin, the gateways): the
	// claim is written over after the answer, not before it, with the
	// others of the next busSettleDelay (settleLater).
	key := busReceiptKey(s.worker, fin.key.RequestID)
	rev, ok := s.held.get(key)
	if !ok {
		return ErrNoEntry
	}
	s.settleLater(busSettle{key: key, requestID: fin.key.RequestID, receipt: fin.o.Detail, rev: rev})
	return nil
}

// publish publishes one line with its seq. A publish whose answer was
// lost may have been stored: the line at that seq, when it is this one,
// counts as published.
func (s *busStore) publish(ctx context.Context, subject string, e logEntry) error {
	_, err := s.b.js.Publish(ctx, subject, e.line, jetstream.WithExpectLastSequence(e.seq-1), jetstream.WithExpectStream(s.name))
	if err != nil {
		m, gerr := s.st.GetMsg(ctx, e.seq)
		if gerr != nil || !bytes.Equal(m.Data, e.line) {
			return s.b.busErr(err)
		}
	}
	s.mu.Lock()
	s.latest = e.seq
	s.mu.Unlock()
	return nil
}

// busSettleDelay is how long a published receipt waits before its claim
// is written over, with every other one published meanwhile; once
// busSettleMax wait, they are written over without waiting longer.
// A claim's write-over is a replicated write of the receipts bucket: done
// at once after each answer, it met the next request's claim at the
// bucket's leader (about a fifth of a fresh request's time on a
// three-node cluster); done together, they are one burst of writes every
// busSettleDelay at most, sent at once.
const (
	busSettleDelay = 10 * time.Millisecond
	busSettleMax   = 64
)

// busSettle is a receipt published whose claim is to be written over.
type busSettle struct {
	key, requestID, receipt string
	rev                     uint64 // the claim's
}

// settleLater writes a receipt over its claim within busSettleDelay,
// together with the others waiting (settlePending). Close waits for them.
func (s *busStore) settleLater(p busSettle) {
	s.pmu.Lock()
	s.pending = append(s.pending, p)
	n := len(s.pending)
	s.pmu.Unlock()
	switch n {
	case busSettleMax: // those beyond wait for this one to take them
		s.finishing.Add(1)
		go s.settlePending()
	case 1:
		s.finishing.Add(1)
		time.AfterFunc(busSettleDelay, s.settlePending)
	}
}

// settlePending writes the receipts waiting over their claims, all at
// once (Update with the claim's revision: a claim settled meanwhile from
// the stream, by Begin, is left as it is). One that fails stays settled
// by the stream: a retry finds its claim in flight and its receipt there.
func (s *busStore) settlePending() {
	defer s.finishing.Done()
	s.pmu.Lock()
	batch := s.pending
	s.pending = nil
	s.pmu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := s.ctx()
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range batch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.writeOver(ctx, p.key, []byte(p.receipt), p.rev); err != nil {
				s.b.log.Warn("bus: a receipt is in the stream, its claim not written over (a retry settles it from the stream)",
					"request_id", p.requestID, "err", err)
			}
			s.held.drop(p.key)
		}()
	}
	wg.Wait()
}
