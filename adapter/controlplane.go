package adapter

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping/lane000"
	"github.com/ccbridge/ccbridge/mapping/lanes"
)

// ControlConfig configures the control plane and its lanes (lane 000 for
// now): on stdio with --ui control, on a unix socket with --control PATH
// beside any dialect. docs/protocol/control.md says what each flag does.
type ControlConfig struct {
	// Socket is --control PATH: a unix socket beside the dialect; "" for none.
	Socket string
	// Team and AgentID are the worker's identity (--team, --agent-id).
	Team, AgentID string
	// Senders may send requests (--allow-sender); none: every request is refused.
	Senders []string
	// MaxAge and ClockSkew bound sent_at (--max-age 10m, --clock-skew 30s).
	MaxAge, ClockSkew time.Duration
	// DedupeTTL is how long a request id is remembered (--dedupe-ttl 10m);
	// DedupeMax bounds how many are (--dedupe-max).
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
}

// ReceiptTTL is how long lane 004 keeps a request's receipt for its
// retries (at most --dedupe-max of them).
const ReceiptTTL = 24 * time.Hour

func (c *ControlConfig) defaults() {
	if c.MaxAge <= 0 {
		c.MaxAge = 10 * time.Minute
	}
	if c.ClockSkew <= 0 {
		c.ClockSkew = 30 * time.Second
	}
	if c.DedupeTTL <= 0 {
		c.DedupeTTL = 10 * time.Minute
	}
	if c.DedupeMax <= 0 {
		c.DedupeMax = 100_000
	}
	if c.StdinSoftLimit <= 0 {
		c.StdinSoftLimit = 64 << 10
	}
	if c.StdinHardLimit <= 0 {
		c.StdinHardLimit = 1 << 20
	}
	if c.RefMax <= 0 {
		c.RefMax = control.DefaultRefMax
	}
	if c.WorkerID == "" {
		c.WorkerID = "local"
	}
	if c.RetainEvents <= 0 {
		c.RetainEvents = control.DefaultRetain
	}
}

// controlPlane is the state every lane of one session shares: the dedupe
// store and the audit trail. Its lanes are safe for concurrent use.
type controlPlane struct {
	store control.Store
	audit *control.Audit
	lane  *control.Lane
	sock  *control.Listener

	// Lane 001: its own store (its five-minute window), and the socket
	// connections that get its loop:current events.
	store001 control.Store
	lane001  *control.Lane001
	feed     control.Feed
	target   control.Target001 // nil: the dialect cannot be paused
	submit   func(func()) bool
	log      *slog.Logger

	// screen is the target, for control.screen.request (screenTarget).
	screen any

	// Lane 004: the receipts, the worker's event log (nil when the
	// dialect has no worker) and the lane.
	store004 control.Store
	log004   *control.EventLog
	lane004  *control.Lane004
}

// openControlPlane opens the store and the audit trail and makes the lane
// that steers target through submit.
func openControlPlane(s *Settings, target control.Target, submit func(func()) bool) (*controlPlane, error) {
	c := s.Control
	c.defaults()
	cp := &controlPlane{submit: submit, log: s.Logger, screen: target}
	scfg := control.StoreConfig{TTL: c.DedupeTTL, MaxKeys: c.DedupeMax}
	var err error
	if c.StateDir != "" {
		if cp.store, err = control.OpenStore(c.StateDir, scfg); err != nil {
			return nil, fmt.Errorf("--state-dir: %w", err)
		}
	} else {
		cp.store = control.NewMemoryStore(scfg)
	}
	scfg001 := control.StoreConfig{TTL: control.DedupeWindow001, MaxKeys: c.DedupeMax}
	if c.StateDir != "" {
		cp.store001, err = control.OpenStore(filepath.Join(c.StateDir, "lane001"), scfg001)
	} else {
		cp.store001 = control.NewMemoryStore(scfg001)
	}
	if err != nil {
		cp.store.Close()
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	if cp.audit, err = control.OpenAudit(c.AuditLog, c.AuditPayloads); err != nil {
		cp.store.Close()
		cp.store001.Close()
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	timeout := s.ControlTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	laneCfg := control.LaneConfig{
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
	cp.target, _ = target.(control.Target001)
	if cp.target != nil {
		laneCfg.Lanes = []string{lanes.Lane000, lanes.Lane001}
	}
	target004, _ := target.(control.Target004)
	if target004 != nil {
		laneCfg.Lanes = append(laneCfg.Lanes, lanes.Lane004)
		if err := cp.open004(&c); err != nil {
			cp.store.Close()
			cp.store001.Close()
			cp.audit.Close()
			return nil, err
		}
	}
	cp.lane = control.NewLane(laneCfg)
	cp.lane001 = control.NewLane001(control.Lane001Config{
		Store:   cp.store001,
		Audit:   cp.audit,
		Target:  cp.target,
		Refusal: "this worker cannot be paused: lane 001 (pause, resume, cancel, escalate) is served with --ui control",
		Submit:  submit,
		Logger:  s.Logger,
	})
	cp.lane004 = control.NewLane004(control.Lane004Config{
		WorkerID: c.WorkerID,
		Store:    cp.store004,
		Log:      cp.log004,
		Audit:    cp.audit,
		Target:   target004,
		Refusal:  "this worker takes no thread or turn requests: lane 004 is served with --ui control and ccbridge serve",
		Submit:   submit,
		Logger:   s.Logger,
	})
	return cp, nil
}

// open004 opens lane 004's receipt store and event log: under
// --state-dir's lane004 folder, or in memory.
func (cp *controlPlane) open004(c *ControlConfig) error {
	scfg := control.StoreConfig{TTL: ReceiptTTL, MaxKeys: c.DedupeMax}
	lcfg := control.EventLogConfig{Retain: c.RetainEvents, Logger: cp.log}
	var err error
	if c.StateDir != "" {
		dir := filepath.Join(c.StateDir, "lane004")
		if cp.store004, err = control.OpenStore(dir, scfg); err != nil {
			return fmt.Errorf("--state-dir: %w", err)
		}
		lcfg.Path = filepath.Join(dir, "events.ndjson")
	} else {
		cp.store004 = control.NewMemoryStore(scfg)
	}
	if cp.log004, err = control.OpenEventLog(lcfg); err != nil {
		cp.store004.Close()
		return fmt.Errorf("--state-dir: %w", err)
	}
	return nil
}

// listen serves the lane on --control PATH, if one was given.
func (cp *controlPlane) listen(s *Settings) error {
	if s.Control.Socket == "" {
		return nil
	}
	l, err := control.Listen(s.Control.Socket)
	if err != nil {
		return fmt.Errorf("--control: %w", err)
	}
	cp.sock = l
	c := s.Control
	c.defaults()
	l.Logger = s.Logger
	l.TooLong = cp.lane.TooLong
	// Inline content may be JSON-escaped up to six bytes a byte.
	go l.ServeConns(c.StdinHardLimit*6+64<<10, cp.open)
	return nil
}

// sockConn is one socket connection: the lanes' lines, by their shape
// (lanes.Classify), answered in order through an outbox; lane 004's
// stream is written by a follower of its own.
type sockConn struct {
	cp     *controlPlane
	out    *control.Outbox
	reply  func([]byte)
	follow *follower004
}

// open greets a new connection with lane 000's capabilities.
func (cp *controlPlane) open(reply func([]byte)) control.ConnHandler {
	c := &sockConn{cp: cp, out: control.NewOutbox(reply, cp.log), reply: reply}
	c.out.Send(cp.lane.Capabilities())
	return c
}

func (c *sockConn) Handle(line []byte) {
	switch lanes.Classify(line) {
	case lanes.Lane001:
		c.subscribe()
		c.cp.lane001.Handle(line, c)
	case lanes.Lane004:
		if c.follow == nil && c.cp.log004 != nil {
			// The stream from now: this request's receipt is in it.
			c.follow = c.cp.follow004(c.cp.log004.Latest(), func(lines [][]byte) bool {
				for _, l := range lines {
					c.reply(l)
				}
				return true
			})
		}
		var rewind func(uint64)
		if c.follow != nil {
			rewind = c.follow.rewind
		}
		if receipt, fresh, _ := c.cp.lane004.Request(line, rewind); receipt != nil && !fresh {
			c.out.Send(receipt)
		}
	default:
		if s, ok := c.cp.screen.(screenTarget); ok && gjson.GetBytes(line, "type").Str == lane000.TypeScreenRequest {
			id := gjson.GetBytes(line, "request_id").Str
			c.cp.submit(func() { c.out.Send(s.ScreenAnswer(id)) })
			return
		}
		c.cp.lane.Handle(line, c.out.Send)
	}
}

// screenTarget is a worker with a screen (--pty): control.screen.request
// is answered on the socket too.
type screenTarget interface{ ScreenAnswer(requestID string) []byte }

// follower004 writes lane 004's stream to one peer, on a goroutine of its
// own (control.Lane004.Follow).
type follower004 struct {
	rw   chan uint64
	stop chan struct{}
	done chan struct{}
}

// follow004 starts a follower from cursor; send writes a batch of lines
// and reports whether the peer is still there.
func (cp *controlPlane) follow004(cursor uint64, send func([][]byte) bool) *follower004 {
	f := &follower004{rw: make(chan uint64), stop: make(chan struct{}), done: make(chan struct{})}
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

// rewind moves the stream back to cursor (a replay). It returns once the
// follower has taken the cursor (the channel is unbuffered), so that the
// replay's receipt, published after, comes after the events replayed.
func (f *follower004) rewind(cursor uint64) {
	select {
	case f.rw <- cursor:
	case <-f.done:
	}
}

// close stops the follower and waits for it.
func (f *follower004) close() {
	if f == nil {
		return
	}
	close(f.stop)
	<-f.done
}

// subscribe adds the connection to lane 001's events on its first
// lane-001 line, with the run's STATE first (on the loop, so that no
// event falls between the two).
func (c *sockConn) subscribe() {
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

func (c *sockConn) Send(line []byte)       { c.out.Send(line) }
func (c *sockConn) SendOnLoop(line []byte) { c.out.Send(line) }

func (c *sockConn) Close() {
	c.follow.close()
	c.cp.feed.Remove(c.out)
	c.out.Close()
}

// close stops the socket and closes the store and the audit trail.
func (cp *controlPlane) close() error {
	if cp == nil {
		return nil
	}
	var errs []error
	if cp.sock != nil {
		errs = append(errs, cp.sock.Close())
	}
	errs = append(errs, cp.store.Close(), cp.store001.Close(), cp.audit.Close())
	if cp.log004 != nil {
		errs = append(errs, cp.log004.Close(), cp.store004.Close())
	}
	return errors.Join(errs...)
}

// ControlFlags adds the control plane's flags, which every dialect takes
// (--control serves the lanes beside any of them).
func ControlFlags(fs *flag.FlagSet, c *ControlConfig) {
	fs.StringVar(&c.Socket, "control", "", "serve the control lanes on a unix socket at this path (mode 0600), beside the dialect")
	fs.StringVar(&c.Team, "team", "", "control lanes: the worker's team")
	fs.StringVar(&c.AgentID, "agent-id", "", "control lanes: the worker's agent id")
	fs.Func("allow-sender", "control lanes: a sender allowed to send requests (repeatable; none: every request is refused)", func(v string) error {
		c.Senders = append(c.Senders, v)
		return nil
	})
	fs.DurationVar(&c.MaxAge, "max-age", 10*time.Minute, "control lanes: refuse a request whose sent_at is older than this")
	fs.DurationVar(&c.ClockSkew, "clock-skew", 30*time.Second, "control lanes: refuse a request whose sent_at is later than now plus this")
	fs.DurationVar(&c.DedupeTTL, "dedupe-ttl", 10*time.Minute, "control lanes: how long a request id is remembered")
	fs.IntVar(&c.DedupeMax, "dedupe-max", 100_000, "control lanes: how many request ids are remembered at most")
	fs.StringVar(&c.StateDir, "state-dir", "", "control lanes: keep request ids, outcomes and sequence numbers in this folder, across restarts")
	fs.StringVar(&c.AuditLog, "audit-log", "", `control lanes: write the audit trail (JSON lines) to this file; "-" for stderr`)
	fs.BoolVar(&c.AuditPayloads, "audit-payloads", false, "control lanes: include the content in the audit trail")
	fs.IntVar(&c.StdinHardLimit, "stdin-hard-limit", 1<<20, "control lanes: largest inline content in bytes; more needs content_ref")
	fs.Func("ref-root", "control lanes: a folder content_ref may name files in (repeatable; none: content_ref is refused)", func(v string) error {
		if !filepath.IsAbs(v) {
			return errors.New("must be an absolute path")
		}
		c.RefRoots = append(c.RefRoots, v)
		return nil
	})
	fs.Int64Var(&c.RefMax, "ref-max", control.DefaultRefMax, "control lanes: largest content_ref file in bytes")
	fs.StringVar(&c.RunID, "run-id", "", "control lane 001: the run's id, which requests name in target.run_id (default: the session id)")
	fs.StringVar(&c.WorkerID, "worker-id", "local", "control lane 004: the worker's id in its receipts and events")
	fs.IntVar(&c.RetainEvents, "retain-events", control.DefaultRetain, "control lane 004: how many of the worker's events are kept for replay")
}

// startControl hands the session to its control lanes once its Run has
// built the target: the ControlHook, and --control's socket. stop closes
// them once the session is over.
func (s *Settings) startControl(t ControlTarget, submit func(func()) bool) (stop func(), err error) {
	if s.ControlHook != nil {
		s.ControlHook(t, submit)
	}
	if s.Control.Socket == "" {
		return func() {}, nil
	}
	cp, err := openControlPlane(s, t, submit)
	if err != nil {
		return nil, err
	}
	if err := cp.listen(s); err != nil {
		cp.close()
		return nil, err
	}
	return func() {
		if err := cp.close(); err != nil {
			s.Logger.Warn("closing the control lanes", "err", err)
		}
	}, nil
}
