package ipc

// The ipc dialect as a control lane's target (control.Target). An
// injected prompt is a user_message as the UI would send it: tracked
// like one, so the UI sees its turn and its one terminal message.

import (
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping/lane000"
)

var _ control.Target = (*ipcLoop)(nil)

func (l *ipcLoop) ControlSessionID() string { return l.sup.SessionID }

func (l *ipcLoop) ControlState() control.WorkerState {
	switch {
	case l.sup.Respawning():
		return control.WorkerStarting
	case l.sup.Live() == nil && l.loop.Ending():
		return control.WorkerExited
	case l.openPrompts() > 0:
		return control.WorkerRunning
	}
	return control.WorkerIdle
}

// openPrompts counts the prompts written to the CLI that have no
// terminal message yet: the running turn's and the queued ones.
func (l *ipcLoop) openPrompts() int {
	n := 0
	for _, p := range l.prompts {
		if p.end == nil {
			n++
		}
	}
	return n
}

func (l *ipcLoop) ControlInject(text []byte, interrupt bool, done func(lane000.Result, string)) {
	defer l.emit()
	if l.loop.Ending() {
		done(lane000.NotLive, control.DetailShuttingDown)
		return
	}
	line := make([]byte, 0, len(text)+48)
	line = append(line, `{"type":"user_message","text":`...)
	line = gjson.AppendJSONString(line, string(text))
	line = append(line, '}')
	cmd, err := l.tr.FromUI(line)
	if err != nil {
		done(lane000.Rejected, err.Error())
		return
	}
	if l.sup.Respawning() {
		// A new child is coming: the prompt waits for it, as a UI line
		// does. It has no turn to interrupt.
		l.sup.Wait(func(err error) {
			defer l.emit()
			if err != nil {
				l.log.Warn("a control lane's prompt was not sent: no CLI took it", "err", err)
				return
			}
			l.command(cmd)
		})
		done(lane000.OK, control.DetailQueued)
		return
	}
	ahead := l.openPrompts()
	if interrupt && ahead > 0 && l.sup.Live() != nil {
		l.interruptTurn()
		ahead-- // the running turn ends first
	}
	if l.sup.Live() == nil {
		// The child died: the prompt resumes the session in a new one,
		// as a user_message does.
		opts, resumed := l.sup.ResumeOpts()
		if _, err := l.sup.Start(opts, resumed); err != nil {
			l.emitError("spawn_failed", err.Error(), false)
			done(lane000.NotLive, control.DetailStartFailed+err.Error())
			return
		}
	}
	l.command(cmd)
	if ahead > 0 {
		done(lane000.OK, control.DetailQueued)
		return
	}
	done(lane000.OK, control.DetailSent)
}

func (l *ipcLoop) ControlInterrupt(done func(lane000.Result, string)) {
	defer l.emit()
	switch {
	case l.sup.Live() == nil:
		done(lane000.NotLive, control.DetailNotRunning)
	case l.openPrompts() == 0:
		done(lane000.OK, control.DetailNoTurn)
	default:
		l.interruptTurn()
		done(lane000.OK, control.DetailInterrupted)
	}
}

// interruptTurn interrupts the running turn as the UI's interrupt does
// (the prompts queued behind it stay).
func (l *ipcLoop) interruptTurn() {
	cmd, err := l.tr.FromUI([]byte(`{"type":"interrupt"}`))
	if err != nil {
		l.log.Error("building an interrupt", "err", err)
		return
	}
	l.command(cmd)
}
