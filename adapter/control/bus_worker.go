package control

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping/lane004"
	"github.com/ccbridge/ccbridge/mapping/lanes"
)

// The worker's side of the bus: its requests and status (request-reply
// on ccbridge.req.ID and ccbridge.status.ID) and its presence.

// Presence timings: a heartbeat every busBeat, each living busBeatTTL,
// so that a worker gone without a word leaves the list within it.
const (
	busBeat    = 2 * time.Second
	busBeatTTL = 3 * busBeat
)

// busMaxFlights bounds the requests a worker carries out at once from the
// bus; more are refused worker_unavailable (retryable).
const busMaxFlights = 64

// busWorker serves one worker on the bus.
type busWorker struct {
	b      *Bus
	lane   *Lane004
	status func() ([]byte, bool)
	subs   []*nats.Subscription
	events *Outbox // lane 001's events on the bus; nil for none
	sem    chan struct{}
	quit   chan struct{}
	done   chan struct{}
}

// ServeBus takes the worker's lane-004 requests and status requests from
// the bus and announces it in the presence bucket until Close; status is
// the worker's status object (false once its session ended). Nothing
// when lane 004 is not on the bus.
func (cp *Plane) ServeBus(status func() ([]byte, bool)) error {
	if cp.bus == nil {
		return nil
	}
	w := &busWorker{b: cp.bus, lane: cp.lane004, status: status, sem: make(chan struct{}, busMaxFlights),
		quit: make(chan struct{}), done: make(chan struct{})}
	var keys []string
	id := cp.cfg.WorkerID
	if cp.log004 != nil {
		for subj, h := range map[string]nats.MsgHandler{busReqPf + id: w.request, busStatusPf + id: w.statusReq} {
			sub, err := cp.bus.nc.Subscribe(subj, h)
			if err != nil {
				w.unsubscribe()
				return err
			}
			w.subs = append(w.subs, sub)
		}
		keys = append(keys, id)
	}
	if cp.cfg.Team != "" && cp.cfg.AgentID != "" {
		subj := busCtlPf + cp.cfg.Team + "." + cp.cfg.AgentID
		sub, err := cp.bus.nc.Subscribe(subj, cp.busControl)
		if err != nil {
			w.unsubscribe()
			return err
		}
		w.subs = append(w.subs, sub)
		if cp.target != nil {
			// Lane 001's events, to whoever listens on the bus.
			w.events = NewOutbox(func(line []byte) { cp.bus.nc.Publish(subj+".ev", line) }, cp.log)
			cp.feed.Add(w.events)
		}
		keys = append(keys, busCtlKey(cp.cfg.Team, cp.cfg.AgentID))
		cp.log.Info("bus: serving lanes 000 and 001", "subject", subj)
	} else {
		cp.log.Info("bus: lanes 000 and 001 stay off the bus: they need --team and --agent-id there (docs/protocol/bus.md)")
	}
	if err := cp.bus.nc.Flush(); err != nil {
		w.unsubscribe()
		return err
	}
	go w.beat(id, keys)
	cp.busw = w
	if cp.log004 != nil {
		cp.log.Info("bus: serving lane 004", "worker", id, "server", cp.bus.nc.ConnectedUrlRedacted())
	}
	return nil
}

// busControl answers a line of lane 000 or 001 from the bus, as a
// socket connection's (planeConn), one at a time in the order they came:
// every line that answers it goes to its reply subject.
func (cp *Plane) busControl(m *nats.Msg) {
	if m.Reply == "" {
		cp.log.Warn("bus: a control line with no reply subject was ignored: nobody would read its answer", "subject", m.Subject)
		return
	}
	p := busPeer{cp.bus.nc, m.Reply}
	switch lanes.Classify(m.Data) {
	case lanes.Lane001:
		cp.lane001.Handle(m.Data, p)
	case lanes.Lane004:
		receipt, _, _ := cp.lane004.Request(m.Data, nil)
		p.Send(receipt)
	default:
		cp.handle000(m.Data, p.Send)
	}
}

// busPeer is a reply subject, the controller of a line from the bus.
type busPeer struct {
	nc    *nats.Conn
	reply string
}

func (p busPeer) Send(line []byte)       { p.nc.Publish(p.reply, line) }
func (p busPeer) SendOnLoop(line []byte) { p.nc.Publish(p.reply, line) }

// alone waits until no other worker holds presence key (its id, or
// its team and agent: busCtlKey) on the bus: a presence that lapses
// within its TTL is one that stopped (killed, or cut off); one still
// beating after it is a live worker. Two workers of one id would write
// one stream; two of one team and agent would both take its requests.
// It runs before the worker touches its stream. flag names what to change.
func (b *Bus) alone(key, name, flag string) error {
	deadline := time.Now().Add(busBeatTTL + busBeat)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
		e, err := b.presence.Get(ctx, key)
		cancel()
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
			return nil
		case err != nil:
			return b.busErr(err)
		case time.Now().After(deadline):
			return fmt.Errorf("%s is already on the bus (%s): give this worker another %s", name, e.Value(), flag)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// busCtlKey is the presence key of the worker of a team and agent id,
// which takes the lanes' requests on ccbridge.ctl.TEAM.AGENT (not a
// worker id: GET …/workers lists those alone).
func busCtlKey(team, agent string) string {
	return "ctl._" + busKeyPart(team) + "._" + busKeyPart(agent)
}

// request carries out one request off the subscription's goroutine and
// answers its receipt; an empty answer: the body was a worker event.
func (w *busWorker) request(m *nats.Msg) {
	select {
	case w.sem <- struct{}{}:
	default:
		p := &lane004.Problem{Code: lane004.CodeWorkerUnavailable, Message: "too many requests in flight on this worker; retry later"}
		m.Respond(lane004.AppendProblem(nil, w.lane.WorkerID(), p, time.Now()))
		return
	}
	go func() {
		defer func() { <-w.sem }()
		receipt, _, _ := w.lane.Request(m.Data, nil)
		m.Respond(receipt) // lost: the receipt is recorded, a retry gets it
	}()
}

func (w *busWorker) statusReq(m *nats.Msg) {
	go func() {
		st, ok := w.status()
		if !ok {
			st = []byte(`{"state":"stopped"}`)
		}
		m.Respond(st)
	}()
}

// beat writes the worker's presence keys every busBeat, each write
// living busBeatTTL, and deletes them at Close.
func (w *busWorker) beat(id string, keys []string) {
	defer close(w.done)
	host, _ := os.Hostname()
	v := jsonw.NewObj(nil).Str("worker_id", id).Str("host", host).Int("pid", int64(os.Getpid())).
		Str("since", time.Now().UTC().Format(time.RFC3339)).End()
	t := time.NewTicker(busBeat)
	defer t.Stop()
	failing := false // warned once per run of failures
	for {
		var err error
		for _, k := range keys {
			ctx, cancel := context.WithTimeout(context.Background(), busBeat)
			if _, perr := w.b.js.Publish(ctx, "$KV."+BusPresence+"."+k, v, jetstream.WithMsgTTL(busBeatTTL)); perr != nil {
				err = perr
			}
			cancel()
		}
		switch {
		case err != nil && !failing:
			w.b.log.Warn("bus: presence heartbeat failed; the worker leaves GET …/workers until one succeeds", "err", err)
			failing = true
		case err == nil && failing:
			w.b.log.Info("bus: presence heartbeat written again")
			failing = false
		}
		select {
		case <-t.C:
		case <-w.quit:
			for _, k := range keys {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				w.b.presence.Delete(ctx, k) // best effort: else its TTL ends it
				cancel()
			}
			return
		}
	}
}

func (w *busWorker) unsubscribe() {
	for _, s := range w.subs {
		s.Unsubscribe()
	}
}

// close stops taking requests and leaves the presence bucket.
func (w *busWorker) close() {
	if w == nil {
		return
	}
	w.unsubscribe()
	if w.events != nil {
		w.events.Close()
	}
	close(w.quit)
	<-w.done
}
