package stream

// Drop-in mode (and the stream dialect) as a control lane's target
// (control.Target). It does not run on the session core's loop: its
// methods run on Run's goroutine (DropIn.Submit), and the prompt is
// written through the relay's writer to the CLI, the one the host pump
// writes the host's lines through. That writer holds a lock for each
// whole line, so an injected line never interleaves with a host line.

import (
	"unicode/utf8"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/lane000"
)

var _ control.Target = (*relay)(nil)

func (r *relay) ControlSessionID() string {
	if s := r.sid.Load(); s != nil {
		return *s
	}
	return ""
}

func (r *relay) ControlState() control.WorkerState {
	switch {
	case r.gone:
		return control.WorkerExited
	case r.running.Load() || r.outstanding() > 0:
		return control.WorkerRunning
	case r.stdinClosed.Load():
		// The host's input is over: the CLI finished and is stopping.
		return control.WorkerExited
	}
	return control.WorkerIdle
}

// notLive reports why no prompt or interrupt can reach the CLI ("" when
// one can).
func (r *relay) notLive() string {
	switch {
	case !r.jsonIn:
		return "the CLI does not read stream-json (no --input-format stream-json)"
	case r.gone || r.stdinClosed.Load():
		return "the CLI's input is closed"
	}
	return ""
}

func (r *relay) ControlInject(text []byte, interrupt bool, done func(lane000.Result, string)) {
	if why := r.notLive(); why != "" {
		done(lane000.NotLive, why)
		return
	}
	if len(text) == 0 || !utf8.Valid(text) {
		done(lane000.Rejected, "the prompt must be non-empty UTF-8 text")
		return
	}
	ahead := r.outstanding()
	if interrupt && (ahead > 0 || r.running.Load()) {
		if err := r.interrupt("a control request"); err != nil {
			done(lane000.NotLive, "writing to the CLI: "+err.Error())
			return
		}
		ahead = max(ahead-1, 0) // the running turn ends first
	}
	line := mapping.AppendUserMessage(nil, mapping.UserOptions{}, mapping.Block{Text: string(text)})
	r.prompts.Add(1) // before the write: its result may come at once
	if err := r.w.WriteLine(line); err != nil {
		r.prompts.Add(-1)
		done(lane000.NotLive, "writing to the CLI: "+err.Error())
		return
	}
	if ahead > 0 {
		done(lane000.OK, control.DetailQueued)
		return
	}
	done(lane000.OK, control.DetailSent)
}

func (r *relay) ControlInterrupt(done func(lane000.Result, string)) {
	switch why := r.notLive(); {
	case why != "":
		done(lane000.NotLive, why)
	case r.outstanding() == 0 && !r.running.Load():
		done(lane000.OK, control.DetailNoTurn)
	default:
		if err := r.interrupt("a control request"); err != nil {
			done(lane000.NotLive, "writing to the CLI: "+err.Error())
			return
		}
		done(lane000.OK, control.DetailInterrupted)
	}
}
