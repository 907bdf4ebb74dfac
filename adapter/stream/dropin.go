package stream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/internal/payload"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/dropin"
	"github.com/ccbridge/ccbridge/session"
)

// DropIn runs one session in drop-in mode: the child is started with the
// host's own CLI arguments and every line passes both ways unchanged. What
// ccbridge adds is listed on Run.
//
// The zero value of each field means its default. A DropIn is used once.
type DropIn struct {
	// Child says how to start the CLI: path, arguments, environment, grace
	// periods. Required: Child.Path.
	Child session.Config

	// MaxLine caps a host line, which is held whole so that it can be
	// checked before it reaches the CLI. Default framing.DefaultMaxLine.
	// Lines from the CLI have no cap: a large one is streamed to the host
	// in pieces.
	MaxLine int

	Logger *slog.Logger

	// Clock is the session's time; nil means the real one.
	Clock adapter.Clock

	// stall is how long, once a shutdown began, output the host takes
	// none of is kept before it is given up (Host.StallLimit). Default
	// 2 s; tests shorten it.
	stall time.Duration

	// StartControl, when set, is handed the session's control.Target and
	// Submit once Run has started the child, and returns what stops the
	// control lanes (the stream dialect's Settings.StartControl:
	// --control). ControlHook is the bare hook, for tests.
	StartControl func(control.Target, func(func()) bool) (stop func(), err error)
	ControlHook  control.Hook

	// h is the Host the relay shares with the loop: its output, Submit,
	// the signals' and the stall's rules, and the clock.
	hostOnce sync.Once
	h        *adapter.Host
}

// host is the session's Host, made on first use (Submit may come before
// Run).
func (d *DropIn) host() *adapter.Host {
	d.hostOnce.Do(func() { d.h = adapter.NewHost(d.Clock) })
	return d.h
}

// Submit runs fn on Run's goroutine, which owns the session's control
// state (Host.Submit). Run serves it also while the host reads nothing.
func (d *DropIn) Submit(fn func()) bool { return d.host().Submit(fn) }

// Run starts the child and relays until it has exited, then returns the
// exit code ccbridge should exit with (the child's).
//
// What it adds to a plain relay:
//   - A host line the CLI cannot read (dropin.Check: not UTF-8 JSON, not an
//     object, a type the CLI does not read from its input, a user line
//     without a user message, a control_request without a request) is
//     never written to the CLI, which would exit on many of them; it is
//     dropped with a warning on the log (without its text, which is logged
//     at debug level) and nothing is written to the host.
//   - SIGINT on signals becomes an in-band interrupt control_request; the
//     CLI's control_response to it is swallowed. A second SIGINT within
//     InterruptWindow, SIGTERM or SIGHUP starts the staged shutdown (the
//     rule of every session: Host.Signal).
//   - End of the host's input closes the child's stdin; once every
//     outstanding turn has its result, the staged shutdown runs.
//   - If the child exits while turns are outstanding (prompts sent, results
//     not seen), one synthetic error result per outstanding turn is written
//     so that the host never waits forever.
//   - The host's output goes through a bounded queue with a writer of its
//     own (the Host's): a host that stops reading makes the relay stop
//     reading the CLI (nothing is dropped), but signals are still served.
//     A failed write (the host closed its end) starts the staged shutdown;
//     once a shutdown began, output the host takes none of for 2 s is
//     given up, so that ccbridge exits within the shutdown's own bounds.
//
// When the host does not speak stream-json (no --input-format stream-json in
// the arguments), its input is copied to the child as raw bytes; when the
// child does not write stream-json, its output is copied raw and no
// synthetic result is written.
//
// Run returns once the child is gone and its output is written. It does not
// wait for the goroutine reading uiIn, which may stay blocked on the host
// until the process exits.
func (d *DropIn) Run(ctx context.Context, uiIn io.Reader, uiOut io.Writer, signals <-chan os.Signal) (int, error) {
	d.defaults()
	host := d.host()
	defer host.End()
	log := d.Logger
	args := d.Child.Args
	jsonIn := session.ArgValue(args, "--input-format") == "stream-json"
	jsonOut := session.ArgValue(args, "--output-format") == "stream-json"

	child, err := session.Start(d.Child)
	if err != nil {
		return 1, fmt.Errorf("starting the CLI: %w", err)
	}
	log.Info("claude started", "pid", child.Pid(), "path", d.Child.Path, "args", len(args))

	if d.stall > 0 {
		host.StallLimit = d.stall
	}
	host.Start(uiOut)
	defer host.Close()
	r := &relay{
		child:    child,
		w:        framing.NewWriter(child.Stdin()),
		log:      log,
		toUI:     framing.NewWriter(host),
		idPrefix: "ccbridge-" + randomHex(4) + "-",
		notify:   make(chan struct{}, 1),
		uiEOF:    make(chan struct{}),
		childEOF: make(chan struct{}),
		jsonIn:   jsonIn,
	}
	r.setSessionID([]byte(resumeIDFromArgs(args)))
	if !jsonIn {
		// The prompt came with the arguments (or as raw stdin): one turn.
		r.prompts.Store(1)
	}

	switch {
	case d.StartControl != nil:
		stop, err := d.StartControl(r, d.Submit)
		if err != nil {
			return 2, err
		}
		defer stop()
	case d.ControlHook != nil:
		d.ControlHook(r, d.Submit)
	}
	if jsonIn {
		go r.pumpUI(uiIn, d.MaxLine)
	} else {
		go r.copyUI(uiIn)
	}
	if jsonOut {
		go r.pumpChild()
	} else {
		go r.copyChild(host)
	}

	var (
		eof       bool
		stopping  bool
		shutdown  sync.Once
		stopChild = func(why string) {
			shutdown.Do(func() {
				log.Info("staged shutdown", "reason", why)
				r.stdinClosed.Store(true) // the shutdown's first stage
				go child.Shutdown(context.WithoutCancel(ctx))
			})
		}
		childEOF = r.childEOF
		exit     *session.Exit // the child's, once its output ended
		uiFailed bool
		timer    = host.NewTimer()
	)
	defer timer.Stop()
	// abort starts the staged shutdown for a signal or the context, and
	// from then on gives the host's output up if the host reads none of
	// it for the Host's StallLimit.
	abort := func(why string) {
		stopChild(why)
		stopping = true
	}
	done := ctx.Done()
	for {
		if exit != nil && (uiFailed || host.Pending() == 0) {
			return exit.Code, host.Result()
		}
		if stopping && !uiFailed && host.WatchStall(host.Pending() > 0) {
			uiFailed = true
			log.Warn("the host has read none of its output while shutting down; giving it up", "for", host.StallLimit.String(), "bytes", host.GiveUp())
		}
		timer.Stop()
		if at := host.StallDeadline(); stopping && !uiFailed && !at.IsZero() {
			timer.Reset(max(at.Sub(host.Now()), 0))
		}
		select {
		case <-done:
			done = nil
			abort("context cancelled")
		case <-host.Wrote():
			if err := host.Failed(); err != nil && !uiFailed {
				uiFailed = true
				log.Warn("writing to the host failed; shutting down", "err", err)
				stopChild("the host's output is gone")
			}
		case <-timer.C():
			// The stall's deadline: WatchStall decides above.
		case sig := <-signals:
			why := host.Signal(sig)
			switch {
			case why != "":
				abort(why)
			case eof:
				// The child's stdin is closed: an interrupt can no
				// longer be delivered in band.
				abort("SIGINT after the host's input ended")
			default:
				if err := r.interrupt("SIGINT"); err != nil {
					log.Warn("interrupt not delivered; shutting down", "err", err)
					abort("interrupt not delivered")
				}
			}
		case <-r.uiEOF:
			eof = true
			r.uiEOF = nil
			log.Debug("host input ended", "outstanding", r.outstanding())
			if r.outstanding() == 0 {
				stopChild("host input ended")
			}
		case <-r.notify:
			if eof && r.outstanding() == 0 {
				stopChild("host input ended and every turn has its result")
			}
		case fn := <-host.Submitted():
			fn()
		case <-childEOF:
			childEOF = nil
			r.gone = true
			<-child.Done()
			e := child.Exit()
			exit = &e
			log.Info("claude exited", "code", exit.Code, "signal", exit.Signal)
			if jsonOut {
				for n := r.lost(*exit); n > 0; n-- {
					// Queued past the bound (swap never waits): the
					// pump is done, and this loop must not block.
					host.Queue(append(r.syntheticResult(*exit), '\n'))
				}
			}
			// The loop goes on until the output is written (or given
			// up), still serving signals.
		}
	}
}

func (d *DropIn) defaults() {
	if d.MaxLine <= 0 {
		d.MaxLine = framing.DefaultMaxLine
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Child.Logger == nil {
		d.Child.Logger = d.Logger
	}
}

// relay is the state of one drop-in session. Each field has one writer:
// results, sessionID and cost the child pump (read by Run only after
// childEOF is closed, or through the atomics); prompts the host pump and
// Run's goroutine (a control lane's prompt, ControlInject), atomically;
// gone Run's goroutine.
type relay struct {
	child      *session.Child
	w          *framing.Writer // to the child's stdin
	log        *slog.Logger
	toUI       *framing.Writer
	idPrefix   string
	interrupts atomic.Int64

	prompts atomic.Int64
	results atomic.Int64 // prompts answered: one a result, or the uuids it names
	// running: a turn began (system/init) and its result has not come.
	running atomic.Bool
	// stdinClosed: the child's stdin was closed (the host's input ended,
	// or the staged shutdown began).
	stdinClosed atomic.Bool

	notify   chan struct{} // a result arrived
	uiEOF    chan struct{} // closed when the host's input ended
	childEOF chan struct{} // closed when the child's output ended

	sessionID []byte
	cost      []byte // the last result's total_cost_usd, raw
	// sid is sessionID for other goroutines (ControlSessionID).
	sid atomic.Pointer[string]

	jsonIn bool // the CLI reads stream-json: a prompt can be injected
	gone   bool // the child's output ended (Run's goroutine only)
}

// setSessionID notes the session's id (the child pump, or Run before
// the pumps start). An id seen already costs no allocation.
func (r *relay) setSessionID(id []byte) { setRelaySID(r, id) }

func setRelaySID[T []byte | string](r *relay, id T) {
	if len(id) == 0 || string(id) == string(r.sessionID) {
		return
	}
	r.sessionID = append(r.sessionID[:0], id...)
	s := string(id)
	r.sid.Store(&s)
}

// lost is how many synthetic results the exit of the child calls for:
// one per prompt without a result. A child that exited on its own, not
// killed by a signal, after its stdin was closed and with no turn
// running has run every prompt it read (the CLI finishes the running and
// queued turns at the end of its input): the prompts left without a
// result were merged by the CLI into the turn of an earlier one, whose
// result answered them, so none is lost. A host that gives its prompts a
// uuid is counted exactly: a result names the prompts it answered.
func (r *relay) lost(exit session.Exit) int64 {
	if exit.Signal == 0 && r.stdinClosed.Load() && !r.running.Load() {
		if n := r.outstanding(); n > 0 {
			r.log.Debug("prompts without a result of their own at a clean exit: merged by the CLI", "prompts", n)
		}
		return 0
	}
	n := r.outstanding()
	if n == 0 && r.running.Load() {
		n = 1 // a turn began for prompts counted as answered: it is lost too
	}
	return n
}

func (r *relay) outstanding() int64 {
	n := r.prompts.Load() - r.results.Load()
	if n < 0 {
		return 0
	}
	return n
}

// pumpUI reads the host's lines, drops the ones that would kill the CLI,
// counts prompts and writes the rest to the child.
func (r *relay) pumpUI(in io.Reader, maxLine int) {
	defer close(r.uiEOF)
	defer r.CloseStdin()
	defer r.stdinClosed.Store(true)
	fr := framing.NewReader(in, maxLine)
	for {
		line, err := fr.ReadLine()
		if err != nil {
			var long *framing.LineTooLongError
			if errors.As(err, &long) {
				r.log.Warn("host line dropped: longer than --max-line", "size", long.Size, "max", long.Max)
				continue
			}
			if !errors.Is(err, io.EOF) {
				r.log.Warn("reading the host's input", "err", err)
			}
			return
		}
		v := dropin.Check(line)
		if !v.OK() {
			r.log.Warn("host line dropped: the CLI cannot read it",
				payload.With(r.log, "preview", payload.Preview(line), "reason", string(v.Reason), "type", v.Type, "size", len(line))...)
			continue
		}
		if v.Type == dropin.TypeUser {
			r.prompts.Add(1)
		}
		err = r.w.AppendLine(line)
		if err == nil && fr.Buffered() == 0 {
			err = r.w.Flush()
		}
		if err != nil {
			r.log.Warn("writing to the CLI", "err", err)
			return
		}
	}
}

// copyUI copies a host that does not speak stream-json straight through.
func (r *relay) copyUI(in io.Reader) {
	defer close(r.uiEOF)
	defer r.CloseStdin()
	if _, err := io.Copy(r.child.Stdin(), in); err != nil {
		r.log.Warn("copying the host's input", "err", err)
	}
}

// pumpChild passes the child's output to the host unchanged, noting results
// and session ids and swallowing answers to ccbridge's own requests. Whole
// lines are passed a buffer at a time, exactly as read, the way a plain
// byte relay passes them; a line longer than the buffer is streamed in
// pieces.
func (r *relay) pumpChild() {
	defer close(r.childEOF)
	fr := framing.NewReader(r.child.Stdout(), 0)
	var sn mapping.Sniffer
	for {
		block, err := fr.ReadBlock()
		switch {
		case err != nil:
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				r.log.Debug("reading the CLI's output", "err", err)
			}
			if ferr := r.toUI.Flush(); ferr != nil {
				r.log.Warn("writing to the host", "err", ferr)
			}
			return
		case block == nil:
			var seg []byte
			var last bool
			if seg, _, last, err = fr.ReadSegment(); err == nil {
				err = r.streamLine(fr, seg, last, &sn)
			}
		case block[len(block)-1] != '\n':
			// The final line, without its terminator: add one.
			if err = r.passLine(block); err == nil {
				err = r.toUI.Flush()
			}
		default:
			err = r.passBlock(block)
		}
		if err != nil {
			r.log.Warn("writing to the host", "err", err)
			// The host is gone; keep draining so that the child never
			// blocks on a full pipe while it shuts down.
			_, _ = io.Copy(io.Discard, r.child.Stdout())
			return
		}
	}
}

// passBlock writes whole lines as they are, except answers to ccbridge's
// own requests, which are cut out.
func (r *relay) passBlock(block []byte) error {
	start := 0
	for off := 0; off < len(block); {
		i := bytes.IndexByte(block[off:], '\n')
		next := off + i + 1
		if r.swallow(block[off : off+i]) {
			if off > start {
				if err := r.toUI.WriteBlock(framing.ValidUTF8(block[start:off])); err != nil {
					return err
				}
			}
			start = next
		}
		off = next
	}
	if start < len(block) {
		return r.toUI.WriteBlock(framing.ValidUTF8(block[start:]))
	}
	return nil
}

// passLine writes one line, adding its terminator.
func (r *relay) passLine(line []byte) error {
	if r.swallow(line) {
		return nil
	}
	return r.toUI.AppendLine(framing.ValidUTF8(line))
}

// swallow notes what ccbridge needs from one whole line (results, the
// session id) and reports whether the line is the CLI's answer to one of
// ccbridge's own requests, which the host must not see.
func (r *relay) swallow(line []byte) bool {
	switch string(lineType(line)) {
	case "result":
		r.noteResult(line)
	case "system":
		if id := gjson.GetBytes(line, "session_id"); id.Type == gjson.String {
			setRelaySID(r, id.Str)
		}
		if gjson.GetBytes(line, "subtype").Str == "init" {
			r.running.Store(true) // a turn begins
		}
	case "control_response":
		id := gjson.GetBytes(line, "response.request_id").Str
		if strings.HasPrefix(id, r.idPrefix) {
			r.log.Debug("answer to ccbridge's own request swallowed", "request_id", id)
			return true
		}
	}
	return false
}

// typePrefix starts most CLI lines; key order is not stable, so it is only
// a fast path.
const typePrefix = `{"type":"`

// lineType returns the top-level "type" of a whole line, without
// allocating when the line starts with it (stream events, assistant and
// user frames do).
func lineType(line []byte) []byte {
	if bytes.HasPrefix(line, []byte(typePrefix)) {
		rest := line[len(typePrefix):]
		if i := bytes.IndexAny(rest, `"\`); i >= 0 && rest[i] == '"' {
			return rest[:i]
		}
	}
	if t := gjson.GetBytes(line, "type"); t.Type == gjson.String {
		return []byte(t.Str)
	}
	return nil
}

// streamLine passes a line too large for one read in pieces, holding the
// host writer for the whole line so that nothing interleaves with it.
func (r *relay) streamLine(fr *framing.Reader, seg []byte, last bool, sn *mapping.Sniffer) error {
	sn.Reset()
	var rerr error
	werr := r.toUI.Stream(func(w io.Writer) error {
		u := framing.UTF8Writer{W: w} // a rune may fall across two pieces
		for {
			sn.Feed(seg)
			if _, err := u.Write(seg); err != nil {
				return err
			}
			if last {
				return u.End()
			}
			seg, _, last, rerr = fr.ReadSegment()
			if rerr != nil {
				// The child's output ended inside a line: end the line
				// here so that the host's framing stays intact.
				return u.End()
			}
		}
	})
	switch string(sn.Type) {
	case "result":
		r.setSessionID(sn.SessionID)
		r.countResult()
	case "system":
		r.setSessionID(sn.SessionID)
	}
	if werr != nil {
		return werr
	}
	return rerr
}

func (r *relay) noteResult(line []byte) {
	if id := gjson.GetBytes(line, "session_id"); id.Type == gjson.String {
		setRelaySID(r, id.Str)
	}
	if c := gjson.GetBytes(line, "total_cost_usd"); c.Type == gjson.Number {
		r.cost = append(r.cost[:0], c.Raw...)
	}
	// A host's prompts that carry a uuid are named by the result that
	// answers them: several when the CLI merged queued prompts into one
	// turn.
	n := int64(1)
	if ids := gjson.GetBytes(line, "user_message_uuids"); ids.IsArray() {
		n = max(n, int64(len(ids.Array())))
	}
	r.countResults(n)
}

func (r *relay) countResult() { r.countResults(1) }

func (r *relay) countResults(n int64) {
	r.running.Store(false)
	r.results.Add(n)
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// copyChild copies a child that does not write stream-json straight through.
func (r *relay) copyChild(out io.Writer) {
	defer close(r.childEOF)
	if _, err := io.Copy(out, r.child.Stdout()); err != nil && !errors.Is(err, os.ErrClosed) {
		r.log.Debug("copying the CLI's output", "err", err)
		// The host is gone: drain, so that the child never blocks.
		_, _ = io.Copy(io.Discard, r.child.Stdout())
	}
}

// interrupt asks the CLI to stop the current turn, in band.
func (r *relay) interrupt(why string) error {
	n := r.interrupts.Add(1)
	line := make([]byte, 0, 96)
	line = append(line, `{"type":"control_request","request_id":"`...)
	line = append(line, r.idPrefix...)
	line = strconv.AppendInt(line, n, 10)
	line = append(line, `","request":{"subtype":"interrupt"}}`...)
	r.log.Info("interrupting the current turn", "reason", why)
	return r.w.WriteLine(line)
}

// syntheticResult is the result line written for a turn the child did not
// finish. It has every field of a CLI error result, so that hosts parse it
// as they parse the real ones, and "ccbridge_synthetic":true.
func (r *relay) syntheticResult(exit session.Exit) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"result","subtype":"error_during_execution","is_error":true`)
	b.WriteString(`,"duration_ms":0,"duration_api_ms":0,"num_turns":0,"result":""`)
	b.WriteString(`,"stop_reason":null,"terminal_reason":"child_exited","total_cost_usd":`)
	if len(r.cost) > 0 {
		b.Write(r.cost)
	} else {
		b.WriteByte('0')
	}
	b.WriteString(`,"usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}`)
	b.WriteString(`,"modelUsage":{},"permission_denials":[],"errors":[`)
	b.Write(jsonString(exitSummary(exit)))
	if tail := exit.Stderr; tail != "" {
		b.WriteByte(',')
		b.Write(jsonString(tail))
	}
	b.WriteString(`],"session_id":`)
	b.Write(jsonString(string(r.sessionID)))
	b.WriteString(`,"uuid":"`)
	b.WriteString(uuid.NewString())
	b.WriteString(`","ccbridge_synthetic":true}`)
	return b.Bytes()
}

func exitSummary(exit session.Exit) string {
	if exit.Signal != 0 {
		return fmt.Sprintf("claude exited during the turn: killed by signal %s (exit code %d)", exit.Signal, exit.Code)
	}
	return fmt.Sprintf("claude exited during the turn with code %d", exit.Code)
}

// resumeIDFromArgs is the session id the child will use when the arguments
// fix it, so that a synthetic result written before the first frame still
// names the session.
func resumeIDFromArgs(args []string) string {
	if id := session.ArgValue(args, "--session-id"); id != "" {
		return id
	}
	for _, a := range args {
		if a == "--fork-session" {
			return ""
		}
	}
	if id := session.ArgValue(args, "--resume"); id != "" {
		return id
	}
	return session.ArgValue(args, "-r")
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b)
}

// jsonString encodes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func jsonString(s string) []byte {
	return gjson.AppendJSONString(make([]byte, 0, len(s)+2), s)
}

// CloseStdin flushes what is held for the child and closes its stdin.
func (r *relay) CloseStdin() {
	if err := r.w.Flush(); err != nil {
		r.log.Debug("flushing to the CLI", "err", err)
	}
	if err := r.child.CloseStdin(); err != nil {
		r.log.Debug("closing the CLI's stdin", "err", err)
	}
}
