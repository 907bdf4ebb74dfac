package control

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccbridge/ccbridge/mapping/lane004"
)

// Gateway is lane 004 as a gateway (ccbridge serve --bus) reaches it: it
// holds no state of its own; receipts, seqs and events are the bus's.
// Safe for concurrent use.
type Gateway struct {
	b *Bus

	mu    sync.Mutex
	calls map[string]*gatewayCall // the requests on their way to a worker, by worker and request id
}

// gatewayCall is one request on its way to its worker, which every
// request of its id that comes meanwhile waits for.
type gatewayCall struct {
	done    chan struct{}
	receipt []byte
	err     error
}

// NewGateway is the gateway of b.
func NewGateway(b *Bus) *Gateway { return &Gateway{b: b, calls: make(map[string]*gatewayCall)} }

// Errors of the gateway.
var (
	// ErrNoWorker: the bus has no stream for this worker id.
	ErrNoWorker = errors.New("no such worker on the bus")
	// ErrWorkerGone: the worker has a stream but takes no requests now
	// (stopped, or cut off from the bus).
	ErrWorkerGone = errors.New("the worker is not connected to the bus")
)

// Connected reports whether the gateway reaches the bus now.
func (g *Gateway) Connected() bool { return g.b.Connected() }

// Lost returns a channel closed once the bus is lost (Bus.Lost).
func (g *Gateway) Lost() <-chan struct{} { return g.b.Lost() }

// Receipt returns the receipt recorded for (worker, requestID), nil when
// there is none yet (none, or in flight).
func (g *Gateway) Receipt(ctx context.Context, worker, requestID string) ([]byte, error) {
	if !BusWorkerID(worker) {
		return nil, ErrNoWorker
	}
	e, err := g.b.receipts.Get(ctx, busReceiptKey(worker, requestID))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		return nil, nil
	case err != nil:
		return nil, g.b.busErr(err)
	}
	if _, inFlight := busClaim(e.Value()); inFlight {
		// Claimed: its receipt may be in the stream already (the worker
		// writes it over its claim after publishing it, or stopped in
		// between).
		receipt, _, err := g.Published(ctx, worker, requestID)
		if errors.Is(err, ErrNoWorker) {
			return nil, nil
		}
		return receipt, err
	}
	return e.Value(), nil
}

// Published returns the receipt of (worker, requestID) in the worker's
// stream, nil when it has not been published (or is no longer kept),
// and the stream's latest seq read before it was looked for.
func (g *Gateway) Published(ctx context.Context, worker, requestID string) (receipt []byte, latest uint64, err error) {
	if !BusWorkerID(worker) {
		return nil, 0, ErrNoWorker
	}
	st, err := g.b.js.Stream(ctx, busStream(worker))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, 0, ErrNoWorker
	}
	if err != nil {
		return nil, 0, g.b.busErr(err)
	}
	latest = st.CachedInfo().State.LastSeq
	m, err := st.GetLastMsgForSubject(ctx, busReceipt(worker, requestID))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return nil, latest, nil
	case err != nil:
		return nil, 0, g.b.busErr(err)
	}
	return m.Data, latest, nil
}

// Request hands a request line of requestID to the worker and returns
// its receipt; nil for a line that is a worker event. ErrWorkerGone when
// no worker takes it; a deadline error when ctx ended first (the worker
// carries it out all the same). The requests of one id that come while
// one is on its way share its answer, bounded by the first one's ctx
// deadline: a burst of retries of one request takes one of the worker's
// places for requests at once (busMaxFlights), not one each, so that none
// is refused for the others.
func (g *Gateway) Request(ctx context.Context, worker, requestID string, body []byte) ([]byte, error) {
	if !BusWorkerID(worker) {
		return nil, ErrNoWorker
	}
	key := worker + "." + busKeyPart(requestID)
	g.mu.Lock()
	c := g.calls[key]
	if c == nil {
		c = &gatewayCall{done: make(chan struct{})}
		g.calls[key] = c
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(busTimeout)
		}
		go func() {
			// Not the first caller's ctx: a client that hangs up does not
			// end the others' wait.
			cctx, cancel := context.WithDeadline(context.Background(), deadline)
			c.receipt, c.err = g.request(cctx, worker, body)
			cancel()
			g.mu.Lock()
			delete(g.calls, key)
			g.mu.Unlock()
			close(c.done)
		}()
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.receipt, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// request is one request to the worker.
func (g *Gateway) request(ctx context.Context, worker string, body []byte) ([]byte, error) {
	m, err := g.b.nc.RequestWithContext(ctx, busReqPf+worker, body)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, ErrWorkerGone
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err() // the worker goes on; its receipt comes on the stream
	case err != nil:
		return nil, g.b.busErr(err)
	case len(m.Data) == 0:
		return nil, nil
	}
	return m.Data, nil
}

// Seqs returns the worker's oldest kept seq and latest seq (oldest is
// latest+1 when none is kept); ErrNoWorker when it has no stream.
func (g *Gateway) Seqs(ctx context.Context, worker string) (oldest, latest uint64, err error) {
	if !BusWorkerID(worker) {
		return 0, 0, ErrNoWorker
	}
	st, err := g.b.js.Stream(ctx, busStream(worker))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, 0, ErrNoWorker
	}
	if err != nil {
		return 0, 0, g.b.busErr(err)
	}
	s := st.CachedInfo().State
	if s.Msgs == 0 {
		return s.LastSeq + 1, s.LastSeq, nil
	}
	return s.FirstSeq, s.LastSeq, nil
}

// Status asks the worker for its status object; ErrWorkerGone when it
// does not answer.
func (g *Gateway) Status(ctx context.Context, worker string) ([]byte, error) {
	m, err := g.b.nc.RequestWithContext(ctx, busStatusPf+worker, nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded):
		return nil, ErrWorkerGone
	case err != nil:
		return nil, g.b.busErr(err)
	}
	return m.Data, nil
}

// Workers lists the live workers' ids (the presence bucket), sorted.
func (g *Gateway) Workers(ctx context.Context) ([]string, error) {
	keys, err := g.b.presence.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, g.b.busErr(err)
	}
	// A worker's id; not its team and agent's key (busCtlKey).
	keys = slices.DeleteFunc(keys, func(k string) bool { return !BusWorkerID(k) })
	slices.Sort(keys)
	return keys, nil
}

// Follow sends the worker's events after cursor, oldest first, as they
// come, until send or flush returns false, ctx ends or the bus is lost
// (an error then: the client resumes from its cursor, at any gateway).
// A cursor whose events are no longer kept, or from the future, first
// gets a worker.cursor_stale line (seq 0) and the stream goes on after
// its resume_after, as Lane004.Follow does.
func (g *Gateway) Follow(ctx context.Context, worker string, cursor uint64, send func(seq uint64, line []byte) bool, flush func() bool) error {
	oldest, latest, err := g.Seqs(ctx, worker)
	if err != nil {
		return err
	}
	if cursor > latest || cursor+1 < oldest {
		line := lane004.AppendCursorStale(nil, worker, cursor, oldest-1, latest, time.Now())
		if !send(0, line) || !flush() {
			return nil
		}
		cursor = oldest - 1
	}
	it, err := g.consume(ctx, worker, cursor)
	if err != nil {
		return err
	}
	lost := g.b.Lost()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-lost:
		case <-ctx.Done():
		case <-finished:
		}
		it.Stop()
	}()
	batch := 0
	for {
		m, err := it.Next()
		if err != nil {
			select {
			case <-lost:
				return ErrBusDown
			default:
			}
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return g.b.busErr(err)
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		if !send(md.Sequence.Stream, m.Data()) {
			return nil
		}
		// A batch ends where the stream does, or at followBatch lines
		// (a long replay is written as it is read).
		if batch++; md.NumPending > 0 && batch < followBatch {
			continue
		}
		batch = 0
		if !flush() {
			return nil
		}
	}
}

// followBatch is the most lines Follow sends before a flush, as
// Lane004.Follow reads the log.
const followBatch = 256

// followRetry bounds how long Follow tries to start reading a stream
// whose server does not answer yet (a stream leader being elected after a
// server of the cluster failed) before it ends the stream with an error.
const followRetry = 15 * time.Second

// consume starts an ordered consumer of the worker's stream after cursor,
// trying again while the cluster elects (not once the bus is lost).
func (g *Gateway) consume(ctx context.Context, worker string, cursor uint64) (jetstream.MessagesContext, error) {
	deadline := time.Now().Add(followRetry)
	for {
		c, err := g.b.js.OrderedConsumer(ctx, busStream(worker), jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: cursor + 1,
			InactiveThreshold: time.Minute,
		})
		if err == nil {
			// Heartbeats every second: a pull request lost in the
			// cluster is noticed (two missed) and the consumer made
			// again within two seconds, not the default's ten.
			it, err := c.Messages(jetstream.PullMaxMessages(256), jetstream.PullExpiry(5*time.Second), jetstream.PullHeartbeat(time.Second))
			if err == nil {
				return it, nil
			}
		}
		err = g.b.busErr(err)
		if !g.b.Connected() || ctx.Err() != nil || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
