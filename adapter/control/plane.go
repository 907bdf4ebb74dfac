package control

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/lanes"
)

// Config configures the control plane and its lanes: on stdio with --ui
// control, on a unix socket with --control PATH beside any dialect. Its
// zero values mean the defaults below, which the flags show too.
// docs/protocol/control.md says what each flag does.
type Config struct {
	// Socket is --control PATH: a unix socket beside the dialect; "" for none.
	Socket string
	// Team and AgentID are the worker's identity (--team, --agent-id).
	Team, AgentID string
	// Senders may send requests (--allow-sender); none: every request is refused.
	Senders []string
	// MaxAge and ClockSkew bound sent_at (--max-age 10m, --clock-skew 30s).
	MaxAge, ClockSkew time.Duration
	// DedupeTTL is how long a request id is remembered (--dedupe-ttl 10m);
	// DedupeMax bounds how many each store holds (--dedupe-max): past it
	// the oldest completed ids are forgotten, within their window too.
	DedupeTTL time.Duration
	DedupeMax int
	// StateDir makes accepted request ids, outcomes and sequence numbers
	// survive a restart (--state-dir); "" keeps them in memory.
	StateDir string
	// AuditLog is the audit trail's file (--audit-log; "-" for stderr, ""
	// for none); AuditPayloads adds the content (--audit-payloads).
	AuditLog      string
	AuditPayloads bool
	// StdinSoftLimit and StdinHardLimit bound inline content (64 KiB, and
	// --stdin-hard-limit 1 MiB).
	StdinSoftLimit, StdinHardLimit int
	// RefRoots are the folders content_ref may name files in (--ref-root);
	// RefMax bounds such a file (--ref-max 64 MiB).
	RefRoots []string
	RefMax   int64
	// RunID names the run lane 001 steers (--run-id); "" is the session id.
	RunID string
	// WorkerID names the worker in lane 004's receipts and events
	// (--worker-id, default "local"); RetainEvents is how many of its
	// events are kept for replay (--retain-events, default 10,000).
	WorkerID     string
	RetainEvents int
	// Worker004 keeps lane 004's events from the start (ccbridge serve);
	// otherwise from the first lane-004 request.
	Worker004 bool
	// Bus puts lane 004 on NATS JetStream (--bus, bus.go): its receipts,
	// seqs and events, and its requests from any gateway.
	Bus BusConfig
}

// ReceiptTTL is how long lane 004 keeps a request's receipt for its
// retries (at most --dedupe-max of them).
const ReceiptTTL = 24 * time.Hour

// MaxRate000 and MaxRate004 are the sustained rates of new request ids
// ccbridge is sized for (docs/protocol/control.md, "The dedupe store"): on
// lane 000 (and 001), and on lane 004 per worker. DefaultDedupeMax holds
// every id for its whole window at these rates, so that a retry within
// the window is never judged anew for want of room: 1,000 a second for
// 10 minutes (lane 000) is 600,000 ids, for lane 001's 5 minutes
// 300,000, and 10 a second for lane 004's 24 hours is 864,000.
const (
	MaxRate000 = 1000
	MaxRate004 = 10
)

// The defaults of Config, in one place: Defaults and Flags use them.
const (
	DefaultMaxAge         = 10 * time.Minute
	DefaultClockSkew      = 30 * time.Second
	DefaultDedupeTTL      = 10 * time.Minute
	DefaultDedupeMax      = 1_000_000 // ≥ MaxRate000 × 10 min, MaxRate004 × 24 h
	DefaultStdinSoftLimit = 64 << 10
	DefaultStdinHardLimit = 1 << 20
	DefaultWorkerID       = "local"
	DefaultTimeout        = 5 * time.Second
)

// Defaults fills in the zero values.
func (c *Config) Defaults() {
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.ClockSkew <= 0 {
		c.ClockSkew = DefaultClockSkew
	}
	if c.DedupeTTL <= 0 {
		c.DedupeTTL = DefaultDedupeTTL
	}
	if c.DedupeMax <= 0 {
		c.DedupeMax = DefaultDedupeMax
	}
	if c.StdinSoftLimit <= 0 {
		c.StdinSoftLimit = DefaultStdinSoftLimit
	}
	if c.StdinHardLimit <= 0 {
		c.StdinHardLimit = DefaultStdinHardLimit
	}
	if c.RefMax <= 0 {
		c.RefMax = DefaultRefMax
	}
	if c.WorkerID == "" {
		c.WorkerID = DefaultWorkerID
	}
	if c.RetainEvents <= 0 {
		c.RetainEvents = DefaultRetain
	}
}

// Plane is the state every lane of one session shares: the dedupe store,
// the receipts, the event log and the audit trail. Its lanes are safe
// for concurrent use.
type Plane struct {
	cfg Config

	store Store
	audit *Audit
	lane  *Lane
	sock  *Listener

	// Lane 001: its own store (its five-minute window), and the socket
	// connections that get its loop:current events.
	store001 Store
	lane001  *Lane001
	feed     Feed
	target   Target001 // nil: the dialect cannot be paused
	submit   func(func()) bool
	log      *slog.Logger

	// screen is the target, for screen.request (screenTarget).
	screen any

	// Lane 004: the receipts, the worker's event log (nil when the
	// dialect has no worker) and the lane.
	store004 Store
	log004   *EventLog
	lane004  *Lane004
	// bus: the lanes on the bus (--bus); busw serves them there
	// (ServeBus); dedupe and runs are the buckets of lanes 000 and 001.
	bus          *Bus
	busw         *busWorker
	dedupe, runs jetstream.KeyValue
}

// Open opens the store and the audit trail and makes the lanes that
// steer target through submit. timeout bounds the worker's taking of an
// input or an interrupt (--control-timeout; DefaultTimeout when 0).
func Open(c Config, timeout time.Duration, log *slog.Logger, target Target, submit func(func()) bool) (*Plane, error) {
	c.Defaults()
	if err := c.Bus.Check(); err != nil {
		return nil, err
	}
	cp := &Plane{cfg: c, submit: submit, log: log, screen: target}
	target004, _ := target.(Target004)
	if c.Bus.On() {
		if c.StateDir != "" {
			return nil, errors.New("--state-dir and --bus: the bus keeps what --state-dir would (request ids, receipts, events, runs); give one or the other")
		}
		if target004 == nil && (c.Team == "" || c.AgentID == "") {
			return nil, errors.New("--bus without lane 004 (which --ui control without --pty serves) carries lanes 000 and 001 alone, on ccbridge.ctl.TEAM.AGENT: give --team and --agent-id")
		}
		if err := cp.dialBus(&c, target004 != nil); err != nil {
			return nil, err
		}
	}
	scfg := StoreConfig{TTL: c.DedupeTTL, MaxKeys: c.DedupeMax}
	scfg001 := StoreConfig{TTL: DedupeWindow001, MaxKeys: c.DedupeMax}
	var err error
	switch {
	case cp.bus != nil:
		cp.store = openBusDedupe(cp.bus, cp.dedupe, c.WorkerID, scfg)
		cp.store001 = openBusDedupe(cp.bus, cp.dedupe, c.WorkerID, scfg001)
	case c.StateDir != "":
		if cp.store, err = OpenStore(c.StateDir, scfg); err != nil {
			return nil, fmt.Errorf("--state-dir: %w", err)
		}
		if cp.store001, err = OpenStore(filepath.Join(c.StateDir, "lane001"), scfg001); err != nil {
			cp.store.Close()
			return nil, fmt.Errorf("--state-dir: %w", err)
		}
	default:
		cp.store = NewMemoryStore(scfg)
		cp.store001 = NewMemoryStore(scfg001)
	}
	if cp.audit, err = OpenAudit(c.AuditLog, c.AuditPayloads); err != nil {
		cp.store.Close()
		cp.store001.Close()
		cp.bus.Close()
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	laneCfg := LaneConfig{
		Store: cp.store,
		Audit: cp.audit,
		Policy: lane000.Policy{
			Team: c.Team, AgentID: c.AgentID, Senders: c.Senders,
			MaxAge: c.MaxAge, ClockSkew: c.ClockSkew,
			SoftLimit: c.StdinSoftLimit, HardLimit: c.StdinHardLimit,
		},
		RefRoots: c.RefRoots,
		RefMax:   c.RefMax,
		Timeout:  timeout,
		TTL:      c.DedupeTTL,
		Target:   target,
		Submit:   submit,
	}
	cp.target, _ = target.(Target001)
	if cp.target != nil {
		laneCfg.Lanes = []string{lanes.Lane000, lanes.Lane001}
	}
	if target004 != nil {
		laneCfg.Lanes = append(laneCfg.Lanes, lanes.Lane004)
		if err := cp.open004(&c); err != nil {
			cp.store.Close()
			cp.store001.Close()
			cp.audit.Close()
			cp.bus.Close()
			return nil, err
		}
	}
	cp.lane = NewLane(laneCfg)
	cp.lane001 = NewLane001(Lane001Config{
		Store:   cp.store001,
		Audit:   cp.audit,
		Target:  cp.target,
		Refusal: "this worker cannot be paused: lane 001 (pause, resume, cancel, escalate) is served with --ui control",
		Submit:  submit,
		Logger:  log,
	})
	cp.lane004 = NewLane004(Lane004Config{
		WorkerID: c.WorkerID,
		Store:    cp.store004,
		Log:      cp.log004,
		Audit:    cp.audit,
		Target:   target004,
		Refusal:  "this worker takes no thread or turn requests: lane 004 is served with --ui control and ccbridge serve",
		Submit:   submit,
		Logger:   log,
	})
	return cp, nil
}

// open004 opens lane 004's receipt store and event log: under
// --state-dir's lane004 folder, the log in the store's file (so that a
// receipt and its line are one commit), or in memory.
func (cp *Plane) open004(c *Config) error {
	scfg := StoreConfig{TTL: ReceiptTTL, MaxKeys: c.DedupeMax, Events: true}
	var err error
	switch {
	case cp.bus != nil:
		if cp.store004, err = openBusStore(cp.bus, c.WorkerID, c.RetainEvents); err != nil {
			return err
		}
	case c.StateDir != "":
		if cp.store004, err = OpenStore(filepath.Join(c.StateDir, "lane004"), scfg); err != nil {
			return fmt.Errorf("--state-dir: %w", err)
		}
	default:
		cp.store004 = NewMemoryStore(scfg)
	}
	lcfg := EventLogConfig{Retain: c.RetainEvents, Store: cp.store004, Logger: cp.log}
	if cp.log004, err = OpenEventLog(lcfg); err != nil {
		cp.store004.Close()
		if c.Bus.On() {
			return fmt.Errorf("--bus: %w", err)
		}
		return fmt.Errorf("--state-dir: %w", err)
	}
	return nil
}

// dialBus connects a worker to the bus (--bus): its id and identity
// checked, alone on the bus, the buckets of lanes 000 and 001 open.
func (cp *Plane) dialBus(c *Config, lane004 bool) error {
	if err := checkBusWorker(c.WorkerID); err != nil {
		return err
	}
	for _, f := range [...]struct{ flag, v string }{{"--team", c.Team}, {"--agent-id", c.AgentID}} {
		if f.v != "" && !busSubjectToken(f.v) {
			return fmt.Errorf("%s %q: with --bus it names a subject (docs/protocol/bus.md), so it is 1 to 128 bytes with no space, control character, '.', '*' or '>'", f.flag, f.v)
		}
	}
	var err error
	if cp.bus, err = DialBus(c.Bus, "ccbridge worker "+c.WorkerID, cp.log); err != nil {
		return err
	}
	if lane004 {
		err = cp.bus.alone(c.WorkerID, "worker id "+strconv.Quote(c.WorkerID), "--worker-id")
	}
	if err == nil && c.Team != "" && c.AgentID != "" {
		err = cp.bus.alone(busCtlKey(c.Team, c.AgentID), "a worker of team "+strconv.Quote(c.Team)+" and agent "+strconv.Quote(c.AgentID), "--agent-id")
	}
	if err != nil {
		cp.bus.Close()
		return fmt.Errorf("--bus: %w", err)
	}
	if cp.dedupe, cp.runs, err = cp.bus.workerBuckets(); err != nil {
		cp.bus.Close()
		return err
	}
	return nil
}

// LoadRun reads the kept state of lane 001's run runID: from the bus
// (--bus) or --state-dir. kept is false when neither keeps runs; a run
// never kept is the zero state.
func (cp *Plane) LoadRun(runID string) (st RunState, kept bool, err error) {
	switch {
	case cp.runs != nil:
		ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
		defer cancel()
		e, err := cp.runs.Get(ctx, busRunKey(runID))
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return RunState{RunID: runID}, true, nil
		}
		if err != nil {
			return RunState{RunID: runID}, true, fmt.Errorf("run state on the bus: %w", cp.bus.busErr(err))
		}
		st, err := decodeRun(e.Value(), runID)
		return st, true, err
	case cp.cfg.StateDir != "":
		st, err := LoadRun(RunFile(cp.cfg.StateDir, runID), runID)
		return st, true, err
	}
	return RunState{RunID: runID}, false, nil
}

// SaveRun keeps st where LoadRun reads it (nothing when nowhere).
func (cp *Plane) SaveRun(st RunState) error {
	switch {
	case cp.runs != nil:
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
		defer cancel()
		if _, err := cp.runs.Put(ctx, busRunKey(st.RunID), b); err != nil {
			return fmt.Errorf("run state on the bus: %w", cp.bus.busErr(err))
		}
	case cp.cfg.StateDir != "":
		return SaveRun(RunFile(cp.cfg.StateDir, st.RunID), st)
	}
	return nil
}

// Listen serves the lanes on --control PATH, if one was given.
func (cp *Plane) Listen() error {
	c := cp.cfg
	if c.Socket == "" {
		return nil
	}
	l, err := Listen(c.Socket)
	if err != nil {
		return fmt.Errorf("--control: %w", err)
	}
	cp.sock = l
	l.Logger = cp.log
	l.TooLong = cp.lane.TooLong
	// Inline content may be JSON-escaped up to six bytes a byte.
	go l.ServeConns(c.StdinHardLimit*6+64<<10, cp.open)
	return nil
}

// planeConn is one socket connection: the lanes' lines, by their shape
// (lanes.Classify), answered in order through an outbox; lane 004's
// stream is written by a follower of its own.
type planeConn struct {
	cp     *Plane
	out    *Outbox
	reply  func([]byte)
	follow *Follower
}

// open greets a new connection with lane 000's capabilities.
func (cp *Plane) open(reply func([]byte)) ConnHandler {
	c := &planeConn{cp: cp, out: NewOutbox(reply, cp.log), reply: reply}
	c.out.Send(cp.lane.Capabilities())
	return c
}

func (c *planeConn) Handle(line []byte) {
	switch lanes.Classify(line) {
	case lanes.Lane001:
		c.subscribe()
		c.cp.lane001.Handle(line, c)
	case lanes.Lane004:
		if c.follow == nil && c.cp.log004 != nil {
			// The stream from now: this request's receipt is in it.
			c.follow = c.cp.Follow004(c.cp.log004.Latest(), func(lines [][]byte) bool {
				for _, l := range lines {
					c.reply(l)
				}
				return true
			})
		}
		var rewind func(uint64)
		if c.follow != nil {
			rewind = c.follow.Rewind
		}
		if receipt, fresh, _ := c.cp.lane004.Request(line, rewind); receipt != nil && !fresh {
			c.out.Send(receipt)
		}
	default:
		c.cp.handle000(line, c.out.Send)
	}
}

// handle000 answers a line of lane 000 through send: a screen request
// of a worker with a screen on the session's loop, any other line by the
// lane.
func (cp *Plane) handle000(line []byte, send func([]byte)) {
	if s, ok := cp.screen.(screenTarget); ok && gjson.GetBytes(line, "type").Str == lane000.TypeScreenRequest {
		id := gjson.GetBytes(line, "request_id").Str
		cp.submit(func() { send(s.ScreenAnswer(id)) })
		return
	}
	cp.lane.Handle(line, send)
}

// screenTarget is a worker with a screen (--pty): screen.request
// is answered on the socket and the bus too.
type screenTarget interface{ ScreenAnswer(requestID string) []byte }

// Follower writes lane 004's stream to one peer, on a goroutine of its
// own (Lane004.Follow).
type Follower struct {
	rw   chan uint64
	stop chan struct{}
	done chan struct{}
}

// Follow004 starts a follower from cursor; send writes a batch of lines
// and reports whether the peer is still there.
func (cp *Plane) Follow004(cursor uint64, send func([][]byte) bool) *Follower {
	f := &Follower{rw: make(chan uint64), stop: make(chan struct{}), done: make(chan struct{})}
	var batch [][]byte
	go func() {
		defer close(f.done)
		cp.lane004.Follow(cursor, func(_ uint64, line []byte) bool {
			batch = append(batch, line)
			return true
		}, func() bool {
			ok := send(batch)
			clear(batch)
			batch = batch[:0]
			return ok
		}, f.rw, f.stop)
	}()
	return f
}

// Rewind moves the stream back to cursor (a replay). It returns once the
// follower has taken the cursor (the channel is unbuffered), so that the
// replay's receipt, published after, comes after the events replayed.
func (f *Follower) Rewind(cursor uint64) {
	select {
	case f.rw <- cursor:
	case <-f.done:
	}
}

// Close stops the follower and waits for it.
func (f *Follower) Close() {
	if f == nil {
		return
	}
	close(f.stop)
	<-f.done
}

// subscribe adds the connection to lane 001's events on its first
// lane-001 line, with the run's STATE first (on the loop, so that no
// event falls between the two).
func (c *planeConn) subscribe() {
	if c.cp.target == nil || c.cp.feed.Has(c.out) {
		return
	}
	done := make(chan struct{})
	if !c.cp.submit(func() {
		defer close(done)
		c.out.Send(c.cp.target.StateLine())
		c.cp.feed.Add(c.out)
	}) {
		return
	}
	<-done
}

func (c *planeConn) Send(line []byte)       { c.out.Send(line) }
func (c *planeConn) SendOnLoop(line []byte) { c.out.Send(line) }

func (c *planeConn) Close() {
	c.follow.Close()
	c.cp.feed.Remove(c.out)
	c.out.Close()
}

// Close stops the socket and closes the stores, the event log and the
// audit trail.
func (cp *Plane) Close() error {
	if cp == nil {
		return nil
	}
	var errs []error
	if cp.sock != nil {
		errs = append(errs, cp.sock.Close())
	}
	cp.busw.close()
	errs = append(errs, cp.store.Close(), cp.store001.Close(), cp.audit.Close())
	if cp.log004 != nil {
		errs = append(errs, cp.log004.Close(), cp.store004.Close())
	}
	cp.bus.Close()
	return errors.Join(errs...)
}

// Flags adds the control plane's flags, which every dialect takes
// (--control serves the lanes beside any of them).
func Flags(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.Socket, "control", "", "serve the control lanes on a unix socket at this path (mode 0600), beside the dialect")
	fs.StringVar(&c.Team, "team", "", "control lanes: the worker's team")
	fs.StringVar(&c.AgentID, "agent-id", "", "control lanes: the worker's agent id")
	fs.Func("allow-sender", "control lanes: a sender allowed to send requests (repeatable; none: every request is refused)", func(v string) error {
		c.Senders = append(c.Senders, v)
		return nil
	})
	fs.DurationVar(&c.MaxAge, "max-age", DefaultMaxAge, "control lanes: refuse a request whose sent_at is older than this")
	fs.DurationVar(&c.ClockSkew, "clock-skew", DefaultClockSkew, "control lanes: refuse a request whose sent_at is later than now plus this")
	fs.DurationVar(&c.DedupeTTL, "dedupe-ttl", DefaultDedupeTTL, "control lanes: how long a request id is remembered")
	fs.IntVar(&c.DedupeMax, "dedupe-max", DefaultDedupeMax, "control lanes: how many request ids each lane remembers at most; past it the oldest are forgotten within their window too, and a retry of one is carried out again")
	fs.StringVar(&c.StateDir, "state-dir", "", "control lanes: keep request ids, outcomes and sequence numbers in this folder, across restarts")
	fs.StringVar(&c.AuditLog, "audit-log", "", `control lanes: write the audit trail (JSON lines) to this file; "-" for stderr`)
	fs.BoolVar(&c.AuditPayloads, "audit-payloads", false, "control lanes: include the content in the audit trail")
	fs.IntVar(&c.StdinHardLimit, "stdin-hard-limit", DefaultStdinHardLimit, "control lanes: largest inline content in bytes; more needs content_ref")
	fs.Func("ref-root", "control lanes: a folder content_ref may name files in (repeatable; none: content_ref is refused)", func(v string) error {
		if !filepath.IsAbs(v) {
			return errors.New("must be an absolute path")
		}
		c.RefRoots = append(c.RefRoots, v)
		return nil
	})
	fs.Int64Var(&c.RefMax, "ref-max", DefaultRefMax, "control lanes: largest content_ref file in bytes")
	fs.StringVar(&c.RunID, "run-id", "", "control lane 001: the run's id, which requests name in target.run_id (default: the session id)")
	fs.StringVar(&c.WorkerID, "worker-id", DefaultWorkerID, "control lane 004: the worker's id in its receipts and events")
	fs.IntVar(&c.RetainEvents, "retain-events", DefaultRetain, "control lane 004: how many of the worker's events are kept for replay")
	BusFlags(fs, &c.Bus)
}

// Lane is lane 000's receiver.
func (cp *Plane) Lane() *Lane { return cp.lane }

// Lane001 is lane 001's receiver.
func (cp *Plane) Lane001() *Lane001 { return cp.lane001 }

// Feed is lane 001's subscribers (its loop:current events).
func (cp *Plane) Feed() *Feed { return &cp.feed }

// Lane004 is lane 004's receiver; Log004 its event log, nil when the
// target takes no lane-004 requests.
func (cp *Plane) Lane004() *Lane004 { return cp.lane004 }
func (cp *Plane) Log004() *EventLog { return cp.log004 }
