package ipc

// CommandKind says which inbound message a Command came from.
type CommandKind uint8

const (
	CmdUserMessage    CommandKind = iota + 1 // user_message → a stdin user envelope
	CmdToolApproval                          // tool_approval → control_response to can_use_tool
	CmdQuestionAnswer                        // question_answer → control_response to AskUserQuestion
	CmdInterrupt                             // interrupt → control_request interrupt
	CmdPermissionMode                        // permission_mode → control_request set_permission_mode
	CmdModelChange                           // model_change → control_request set_model
	CmdStopTask                              // stop_task → control_request stop_task
	CmdSessionCommand                        // session_command → respawn the CLI (no stdin line)
	CmdSteer                                 // steer → a stdin user envelope, into the running turn
	CmdRewind                                // rewind → the core's rewind (no stdin line of its own)
	CmdQuery                                 // query → a control_request whose answer is a query_result
)

var commandNames = [...]string{"", "user_message", "tool_approval", "question_answer", "interrupt", "permission_mode", "model_change", "stop_task", "session_command", "steer", "rewind", "query"}

// String returns the inbound type the kind comes from.
func (k CommandKind) String() string {
	if int(k) < len(commandNames) && k > 0 {
		return commandNames[k]
	}
	return "unknown"
}

// Command is what one valid inbound ipc line asks for.
type Command struct {
	Kind CommandKind

	// Stdin is the one line to write to the CLI's stdin, without the
	// trailing newline. It is nil for CmdSessionCommand.
	Stdin []byte

	// RequestID is the control_request id FromUI chose for CmdInterrupt,
	// CmdPermissionMode, CmdModelChange, CmdStopTask and CmdQuery (already tracked:
	// its control_response is matched by FromCLI, and the adapter may
	// time it out), or the CLI's request id that CmdToolApproval and
	// CmdQuestionAnswer answer (already settled).
	RequestID string

	// EndsTurn is set on a deny with interrupt:true: the CLI will end the
	// turn (result error_during_execution, aborted_tools).
	EndsTurn bool

	// Respawn says how to restart the CLI for CmdSessionCommand.
	Respawn Respawn

	// Rewind says how far back CmdRewind goes.
	Rewind Rewind

	// PromptID is the client uuid the user message carries
	// (CmdUserMessage and CmdSteer with Options.NewPromptID), "" without
	// one.
	PromptID string

	// Echo is the line to write back to the UI for a user_message,
	// tool_approval or question_answer, with Options.Echo: the message as
	// FromUI read it (its type and the members it reads, never the line
	// as sent), with "ipc_version": 2 and "echo": true. nil otherwise.
	Echo []byte
}

// Control reports whether the command belongs to the control tier: it
// must reach the CLI at once and never wait behind ordinary work. Only
// user messages (which the CLI queues itself) and session commands are
// ordinary.
func (c *Command) Control() bool {
	return c.Kind != CmdUserMessage && c.Kind != CmdSteer && c.Kind != CmdSessionCommand && c.Kind != CmdRewind
}

// Rewind is an inbound rewind: back Turns turns, or to the prompt
// UserMessageID (one of the two is set), with the files (Files), or only
// what it would do (DryRun).
type Rewind struct {
	Turns         int
	UserMessageID string
	Files, DryRun bool
}

// RespawnMode is how a session_command restarts the CLI.
type RespawnMode uint8

const (
	RespawnNone     RespawnMode = iota
	RespawnNew                  // a fresh session: no --resume
	RespawnResume               // --resume SessionID
	RespawnContinue             // --continue: the most recent session in the cwd
	RespawnFork                 // --resume SessionID --fork-session, or --continue --fork-session when SessionID is ""
)

var respawnNames = [...]string{"none", "new", "resume", "continue", "fork"}

func (m RespawnMode) String() string {
	if int(m) < len(respawnNames) {
		return respawnNames[m]
	}
	return "none"
}

// Respawn is a request to restart the CLI child.
type Respawn struct {
	Mode      RespawnMode
	SessionID string
}
