package acp

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping/jsonrpc"
)

// ProtocolVersion is the ACP protocol version ccbridge speaks.
const ProtocolVersion = 1

// ACP error codes besides the JSON-RPC standard ones (jsonrpc.Code*).
const (
	CodeAuthRequired     = -32000 // authentication required
	CodeResourceNotFound = -32002 // no such session (or session file)
	CodeRequestCancelled = -32800 // the request was cancelled ($/cancel_request)
)

// Methods, client → agent.
const (
	MethodInitialize      = "initialize"
	MethodAuthenticate    = "authenticate"
	MethodSessionNew      = "session/new"
	MethodSessionLoad     = "session/load"
	MethodSessionResume   = "session/resume"
	MethodSessionList     = "session/list"
	MethodSessionClose    = "session/close"
	MethodSessionPrompt   = "session/prompt"
	MethodSessionCancel   = "session/cancel" // a notification
	MethodSetMode         = "session/set_mode"
	MethodSetConfigOption = "session/set_config_option"
	// MethodSteering is the steering extension claude-agent-acp and
	// codex-acp answer (ACP's "_" convention): content added to the
	// running prompt's turn (docs/protocol/acp.md).
	MethodSteering      = "_session/steering"
	MethodCancelRequest = "$/cancel_request" // a notification, both ways
	MethodLogout        = "logout"
	MethodSessionFork   = "session/fork" // unstable in ACP: sessionCapabilities.fork
)

// Methods, agent → client.
const (
	MethodSessionUpdate     = "session/update" // a notification
	MethodRequestPermission = "session/request_permission"
	MethodElicitationCreate = "elicitation/create"
)

// Error is an ACP error answer: a JSON-RPC error code, a message and
// optional raw JSON data. It is jsonrpc.Error, shared with the rpc dialect.
type Error = jsonrpc.Error

// InvalidParams returns a -32602 error.
func InvalidParams(msg string) *Error {
	return &Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// NotFound returns a -32002 error.
func NotFound(msg string) *Error {
	return &Error{Code: CodeResourceNotFound, Message: msg}
}

// Internal returns a -32603 error.
func Internal(msg string) *Error {
	return &Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// ClientCaps are the client capabilities ccbridge acts on.
type ClientCaps struct {
	// ElicitationForm: the client renders elicitation/create forms
	// (clientCapabilities.elicitation.form present and not null).
	// AskUserQuestion then goes through elicitation.
	ElicitationForm bool
	// ConfigBoolean: the client accepts boolean config options.
	ConfigBoolean bool
	// AuthTerminal: the client can run the agent's command in a terminal
	// for a "terminal" auth method (clientCapabilities.auth.terminal).
	// Only then is one advertised, as the spec asks.
	AuthTerminal bool
}

// ParseInitialize reads initialize params: the protocol version the client
// proposes and the capabilities ccbridge uses. The version ccbridge answers
// with is always ProtocolVersion (the client's when it is 1, else ccbridge's
// latest, as the spec asks).
func ParseInitialize(params gjson.Result) (clientVersion int64, caps ClientCaps, err *Error) {
	if !params.IsObject() {
		return 0, caps, InvalidParams("initialize needs params {protocolVersion, clientCapabilities?, clientInfo?}")
	}
	v := params.Get("protocolVersion")
	if v.Type != gjson.Number || v.Num != float64(int64(v.Num)) || v.Num < 0 || v.Num > 65535 {
		return 0, caps, InvalidParams("protocolVersion must be an integer from 0 to 65535")
	}
	cc := params.Get("clientCapabilities")
	if cc.Exists() && cc.Type != gjson.Null && !cc.IsObject() {
		return 0, caps, InvalidParams("clientCapabilities must be an object")
	}
	form := cc.Get("elicitation.form")
	caps.ElicitationForm = form.IsObject()
	caps.ConfigBoolean = cc.Get("session.configOptions.boolean").IsObject()
	caps.AuthTerminal = cc.Get("auth.terminal").Type == gjson.True
	return int64(v.Num), caps, nil
}

// AgentInfo names the agent in the initialize result.
type AgentInfo struct {
	Name, Title, Version string
}

// AuthMethodID is the authentication method ccbridge always advertises.
// The CLI keeps its own credentials; authenticate with this id has nothing
// to do.
const AuthMethodID = "claude-code"

// AuthTerminalID is the terminal authentication method: the client runs
// ccbridge's own command with AuthTerminalArgs appended, in a terminal,
// and ccbridge runs the CLI's interactive login (`claude auth login`)
// there. It is advertised only to a client that declared
// clientCapabilities.auth.terminal, and never passed to authenticate.
const AuthTerminalID = "claude-login"

// AuthTerminalArgs are the arguments the client appends to ccbridge's
// command for the terminal method (main.go: --login).
var AuthTerminalArgs = []string{"--login"}

// AppendInitializeResult appends the initialize result: protocol version 1,
// the capabilities ccbridge implements (logout, and the unstable
// session/fork) and its auth methods: the agent method always, the
// terminal method when the client can run one (caps.AuthTerminal).
func AppendInitializeResult(dst []byte, info AgentInfo, caps ClientCaps) []byte {
	dst = append(dst, `{"protocolVersion":`...)
	dst = jsonw.Int(dst, ProtocolVersion)
	dst = append(dst, `,"agentCapabilities":{"loadSession":true,`+
		`"promptCapabilities":{"image":true,"audio":false,"embeddedContext":true},`+
		`"mcpCapabilities":{"http":true,"sse":true},`+
		`"sessionCapabilities":{"list":{},"resume":{},"close":{},"additionalDirectories":{},"fork":{}},`+
		`"auth":{"logout":{}},`+
		`"_meta":{"ccbridge":{"rewind":true}}},`+
		`"authMethods":[{"id":"`+AuthMethodID+`","name":"Claude Code login",`+
		`"description":"ccbridge runs the Claude Code CLI, which uses its own credentials (run claude auth login in a terminal, or set ANTHROPIC_API_KEY). When the CLI is already logged in there is nothing to do."}`...)
	if caps.AuthTerminal {
		dst = append(dst, `,{"id":"`+AuthTerminalID+`","name":"Log in to Claude Code in a terminal",`+
			`"description":"Runs the Claude Code CLI's own login (claude auth login): sign in with your Claude subscription or Anthropic Console account.",`+
			`"type":"terminal","args":`...)
		dst = append(dst, '[')
		for i, a := range AuthTerminalArgs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonw.String(dst, a)
		}
		dst = append(dst, "]}"...)
	}
	dst = append(dst, ']')
	dst = append(dst, `,"agentInfo":{"name":`...)
	dst = jsonw.String(dst, info.Name)
	if info.Title != "" {
		dst = append(dst, `,"title":`...)
		dst = jsonw.String(dst, info.Title)
	}
	dst = append(dst, `,"version":`...)
	dst = jsonw.String(dst, info.Version)
	// The steering extension's advertisement, where claude-agent-acp puts it.
	return append(dst, `},"_meta":{"steering":{"supported":true}}}`...)
}

// The outcomes of _session/steering, as claude-agent-acp names them.
const (
	SteerInjected       = "injected"       // added to the running turn
	SteerStartedNewTurn = "startedNewTurn" // no turn ran: the content runs as a prompt of its own
	SteerPromptRequired = "promptRequired" // no turn ran and the client asked for this instead (idleBehavior)
)

// AppendSteerResult appends _session/steering's result: the outcome, and
// for promptRequired the reason "noRunningTurn".
func AppendSteerResult(dst []byte, outcome string) []byte {
	dst = append(dst, `{"outcome":`...)
	dst = jsonw.String(dst, outcome)
	if outcome == SteerPromptRequired {
		dst = append(dst, `,"reason":"noRunningTurn"`...)
	}
	return append(dst, '}')
}

// AppendLogoutResult appends the logout result: {} with, in
// _meta.ccbridge.authCleared, whether the CLI's stored login was removed
// (false when there was none, or when the CLI uses a key from its
// environment, which logout cannot clear).
func AppendLogoutResult(dst []byte, cleared bool) []byte {
	dst = append(dst, `{"_meta":{"ccbridge":{"authCleared":`...)
	dst = strconv.AppendBool(dst, cleared)
	return append(dst, "}}}"...)
}

// appendUpdateHead starts a session/update notification line up to and
// including the "sessionUpdate" member; close it with appendUpdateTail.
func appendUpdateHead(dst, sid []byte, kind string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
	dst = append(dst, sid...)
	dst = append(dst, `,"update":{"sessionUpdate":"`...)
	dst = append(dst, kind...)
	return append(dst, '"')
}

func appendUpdateTail(dst []byte) []byte {
	return append(dst, "}}}"...)
}

// appendMeta appends the update's _meta: the tool name (when known) and
// the subagent's parent tool call (when the frame came from a subagent),
// under "claudeCode" as the Node adapter (claude-agent-acp) does.
func appendMeta(dst []byte, toolName, parent string) []byte {
	if toolName == "" && parent == "" {
		return dst
	}
	dst = append(dst, `,"_meta":{"claudeCode":{`...)
	if toolName != "" {
		dst = append(dst, `"toolName":`...)
		dst = jsonw.String(dst, toolName)
	}
	if parent != "" {
		if toolName != "" {
			dst = append(dst, ',')
		}
		dst = append(dst, `"parentToolUseId":`...)
		dst = jsonw.String(dst, parent)
	}
	return append(dst, "}}"...)
}

// AppendCancelRequest appends the $/cancel_request notification that
// withdraws an agent → client request (id is raw JSON).
func AppendCancelRequest(dst []byte, id string) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":`...)
	dst = append(dst, id...)
	return append(dst, "}}"...)
}

// AppendStopResult appends a session/prompt result {"stopReason":reason}.
func AppendStopResult(dst []byte, reason string) []byte {
	dst = append(dst, `{"stopReason":"`...)
	dst = append(dst, reason...)
	return append(dst, `"}`...)
}
