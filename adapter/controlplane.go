package adapter

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ccbridge/ccbridge/adapter/control"
	mctl "github.com/ccbridge/ccbridge/mapping/control"
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
}

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
}

// openControlPlane opens the store and the audit trail and makes the lane
// that steers target through submit.
func openControlPlane(s *Settings, target control.Target, submit func(func()) bool) (*controlPlane, error) {
	c := s.Control
	c.defaults()
	cp := &controlPlane{}
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
		Policy: mctl.Policy{
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
		laneCfg.Lanes = []string{mctl.Lane000, mctl.Lane001}
	}
	cp.lane = control.NewLane(laneCfg)
	cp.submit, cp.log = submit, s.Logger
	cp.lane001 = control.NewLane001(control.Lane001Config{
		Store:   cp.store001,
		Audit:   cp.audit,
		Target:  cp.target,
		Refusal: "this worker cannot be paused: lane 001 (pause, resume, cancel, escalate) is served with --ui control",
		Submit:  submit,
		Logger:  s.Logger,
	})
	return cp, nil
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

// sockConn is one socket connection: lane 000's and lane 001's lines, by
// their shape (mctl.Classify), answered in order through an outbox.
type sockConn struct {
	cp  *controlPlane
	out *control.Outbox
}

// open greets a new connection with lane 000's capabilities.
func (cp *controlPlane) open(reply func([]byte)) control.ConnHandler {
	c := &sockConn{cp: cp, out: control.NewOutbox(reply, cp.log)}
	c.out.Send(cp.lane.Capabilities())
	return c
}

func (c *sockConn) Handle(line []byte) {
	if mctl.Classify(line) != mctl.Lane001 {
		c.cp.lane.Handle(line, c.out.Send)
		return
	}
	c.subscribe()
	c.cp.lane001.Handle(line, c)
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
