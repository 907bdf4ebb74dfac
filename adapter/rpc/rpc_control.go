package rpc

// The rpc dialect as a control lane's target (control.Target). An
// injected prompt is a run of its own, started as run.start starts one:
// the UI sees its run.status and agent.event notifications under a run
// id it did not ask for, and no run.start response.

import (
	"unicode/utf8"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/ccbridge/ccbridge/mapping/lane000"
)

var _ control.Target = (*rpcLoop)(nil)

func (l *rpcLoop) ControlSessionID() string { return l.sup.SessionID }

func (l *rpcLoop) ControlState() control.WorkerState {
	switch {
	case l.sup.Live() == nil && l.loop.Ending():
		return control.WorkerExited
	case l.sup.Respawning() || l.sup.Live() != nil && l.initWaiting:
		return control.WorkerStarting
	case l.tr.ActiveRun() != "" || l.tr.Busy():
		return control.WorkerRunning
	}
	return control.WorkerIdle
}

func (l *rpcLoop) ControlInject(text []byte, interrupt bool, done func(lane000.Result, string)) {
	defer l.emit()
	if l.loop.Ending() {
		done(lane000.NotLive, control.DetailShuttingDown)
		return
	}
	if len(text) == 0 || !utf8.Valid(text) {
		done(lane000.Rejected, "the prompt must be non-empty UTF-8 text")
		return
	}
	if active := l.tr.ActiveRun(); active != "" {
		if !interrupt {
			done(lane000.Busy, control.DetailRunActive)
			return
		}
		// As run.cancel: run.status cancelled, and an in-band interrupt
		// of its turn; the new run's prompt waits for the turn's end.
		l.cancelRun(active, control.DetailInterruptedBy)
	}
	if e := l.prepareRun(""); e != nil {
		done(lane000.NotLive, control.DetailStartFailed+e.Message)
		return
	}
	runID := l.newRunID()
	l.launchRun(runID, []mapping.Block{{Text: string(text)}})
	if l.tr.Held() == runID {
		done(lane000.OK, control.DetailQueued)
		return
	}
	done(lane000.OK, control.DetailSent)
}

func (l *rpcLoop) ControlInterrupt(done func(lane000.Result, string)) {
	defer l.emit()
	id := l.tr.ActiveRun()
	switch {
	case id != "":
		if l.cancelRun(id, control.DetailInterruptedBy).Interrupt {
			done(lane000.OK, control.DetailInterrupted)
		} else {
			done(lane000.OK, "the run was cancelled before its prompt reached the CLI")
		}
	case l.sup.Live() == nil:
		done(lane000.NotLive, control.DetailNotRunning)
	default:
		done(lane000.OK, control.DetailNoTurn)
	}
}
