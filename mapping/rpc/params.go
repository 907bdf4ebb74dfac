package rpc

import (
	"math"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
)

// Request methods (UI → runtime).
const (
	MethodInitialize      = "initialize"
	MethodRunStart        = "run.start"
	MethodRunCancel       = "run.cancel"
	MethodRunSteer        = "run.steer"
	MethodSessionList     = "session.list"
	MethodSessionHistory  = "session.history"
	MethodSessionRewind   = "session.rewind"
	MethodModelList       = "model.list"
	MethodModelSet        = "model.set"
	MethodMCPList         = "mcp.list"
	MethodSkillsList      = "skills.list"
	MethodContextInspect  = "context.inspect"
	MethodShellExec       = "shell.exec"
	MethodRequestCancel   = "request.cancel"
	MethodUIContextUpdate = "ui.context.update"
	// tool.call, auth.logout and shell.output: tools.go.
)

// ProtocolVersion is the version of the protocol this dialect speaks.
const ProtocolVersion = "0"

// Limits on params.
const (
	DefaultSessionLimit    = 50
	MaxSessionLimit        = 1000
	DefaultHistoryRuns     = 20
	DefaultHistoryEvents   = 1500
	MaxHistoryEvents       = 100000
	DefaultShellTimeout    = 120 // seconds
	MaxShellTimeout        = 300 // seconds; larger values are clamped
	MaxShellCommandBytes   = 64 << 10
	MaxRunInputBytes       = 64 << 20
	maxUIContextBytes      = 1 << 20
	commandPreviewMaxRunes = 400
)

// params reads and checks one request's params. The first problem found
// is kept in err; later reads are no-ops.
type params struct {
	p   gjson.Result
	err *Error
}

func newParams(p gjson.Result) *params {
	v := &params{p: p}
	if p.Exists() && !p.IsObject() {
		v.err = InvalidParams("params must be an object")
	}
	return v
}

func (v *params) fail(msg string) {
	if v.err == nil {
		v.err = InvalidParams(msg)
	}
}

func (v *params) get(path string) gjson.Result {
	if v.err != nil || !v.p.Exists() {
		return gjson.Result{}
	}
	return v.p.Get(path)
}

// str reads an optional string (absent or null is ""); required makes an
// empty or blank one an error.
func (v *params) str(path string, required bool) string {
	r := v.get(path)
	switch {
	case v.err != nil:
		return ""
	case !r.Exists() || r.Type == gjson.Null:
		if required {
			v.fail(path + " is required")
		}
		return ""
	case r.Type != gjson.String:
		v.fail(path + " must be a string")
		return ""
	case required && strings.TrimSpace(r.Str) == "":
		v.fail(path + " must not be empty")
		return ""
	}
	return r.Str
}

// boolean reads an optional boolean; def when absent or null.
func (v *params) boolean(path string, def bool) bool {
	r := v.get(path)
	switch {
	case v.err != nil || !r.Exists() || r.Type == gjson.Null:
		return def
	case r.Type == gjson.True:
		return true
	case r.Type == gjson.False:
		return false
	}
	v.fail(path + " must be a boolean")
	return def
}

// integer reads an optional whole number in [lo, hi]; def when absent.
func (v *params) integer(path string, def, lo, hi int) int {
	r := v.get(path)
	switch {
	case v.err != nil || !r.Exists() || r.Type == gjson.Null:
		return def
	case r.Type != gjson.Number || r.Num != math.Trunc(r.Num):
		v.fail(path + " must be a whole number")
		return def
	case r.Num < float64(lo) || r.Num > float64(hi):
		v.fail(path + " must be between " + itoa(lo) + " and " + itoa(hi))
		return def
	}
	return int(r.Num)
}

// object reads an optional object, returning its raw JSON ("" if absent).
func (v *params) object(path string, required bool) gjson.Result {
	r := v.get(path)
	switch {
	case v.err != nil:
		return gjson.Result{}
	case !r.Exists() || r.Type == gjson.Null:
		if required {
			v.fail(path + " is required")
		}
		return gjson.Result{}
	case !r.IsObject():
		v.fail(path + " must be an object")
		return gjson.Result{}
	}
	return r
}

// InitializeParams are initialize's params.
type InitializeParams struct {
	ProtocolVersion string
	ClientName      string
	ClientVersion   string
	UI              UICapabilities
}

// ParseInitialize checks initialize's params: protocol_version (string)
// and client {name, version} are required; ui_capabilities is optional,
// and only an explicit false turns a kind of UI request off.
func ParseInitialize(p gjson.Result) (InitializeParams, *Error) {
	v := newParams(p)
	var ip InitializeParams
	ip.ProtocolVersion = v.str("protocol_version", true)
	v.object("client", true)
	ip.ClientName = v.str("client.name", true)
	ip.ClientVersion = v.str("client.version", true)
	v.object("ui_capabilities", false)
	ip.UI = UICapabilities{
		Confirm: v.boolean("ui_capabilities.supports_confirm", true),
		Pick:    v.boolean("ui_capabilities.supports_pick", true),
		Prompt:  v.boolean("ui_capabilities.supports_prompt", true),
	}
	return ip, v.err
}

// RunStartParams are run.start's params.
type RunStartParams struct {
	Text            string
	SessionID       string
	ForceCompaction bool
	UIContext       string // raw object, "" if absent
}

// ParseRunStart checks run.start's params: input {type: "text", text} is
// required (text may be empty only with force_compaction); session_id, if
// given, must be a UUID; ui_context and meta must be objects.
func ParseRunStart(p gjson.Result) (RunStartParams, *Error) {
	v := newParams(p)
	var rp RunStartParams
	v.object("input", true)
	if typ := v.str("input.type", true); v.err == nil && typ != "text" {
		v.fail(`input.type must be "text"`)
	}
	rp.ForceCompaction = v.boolean("force_compaction", false)
	rp.Text = v.str("input.text", !rp.ForceCompaction)
	if v.err == nil && len(rp.Text) > MaxRunInputBytes {
		v.fail("input.text is over " + itoa(MaxRunInputBytes) + " bytes")
	}
	rp.SessionID = v.str("session_id", false)
	if v.err == nil && rp.SessionID != "" && !mapping.ValidSessionID(rp.SessionID) {
		v.fail("session_id must be a UUID")
	}
	ctx := v.object("ui_context", false)
	if v.err == nil && len(ctx.Raw) > maxUIContextBytes {
		v.fail("ui_context is over " + itoa(maxUIContextBytes) + " bytes")
	}
	rp.UIContext = ctx.Raw
	v.object("meta", false)
	return rp, v.err
}

// RunCancelParams are run.cancel's params.
type RunCancelParams struct{ RunID, Reason string }

// ParseRunCancel checks run.cancel's params: run_id is required.
func ParseRunCancel(p gjson.Result) (RunCancelParams, *Error) {
	v := newParams(p)
	rp := RunCancelParams{RunID: v.str("run_id", true)}
	rp.Reason = v.str("reason", false)
	return rp, v.err
}

// RunSteerParams are run.steer's params.
type RunSteerParams struct{ RunID, Text string }

// ParseRunSteer checks run.steer's params: run_id and a non-empty text
// are required.
func ParseRunSteer(p gjson.Result) (RunSteerParams, *Error) {
	v := newParams(p)
	rp := RunSteerParams{RunID: v.str("run_id", true)}
	rp.Text = v.str("text", true)
	if v.err == nil && strings.TrimSpace(rp.Text) == "" {
		v.fail("text must not be blank")
	}
	return rp, v.err
}

// ParseSessionList checks session.list's params: limit, 1 to 1000,
// default 50.
func ParseSessionList(p gjson.Result) (limit int, err *Error) {
	v := newParams(p)
	limit = v.integer("limit", DefaultSessionLimit, 1, MaxSessionLimit)
	return limit, v.err
}

// SessionHistoryParams are session.history's params.
type SessionHistoryParams struct {
	SessionID          string
	MaxRuns, MaxEvents int
}

// ParseSessionHistory checks session.history's params: session_id (a
// UUID) is required; max_runs (default 20) and max_events (default 1500)
// are whole numbers from 0.
func ParseSessionHistory(p gjson.Result) (SessionHistoryParams, *Error) {
	v := newParams(p)
	hp := SessionHistoryParams{SessionID: v.str("session_id", true)}
	if v.err == nil && !mapping.ValidSessionID(hp.SessionID) {
		v.fail("session_id must be a UUID")
	}
	hp.MaxRuns = v.integer("max_runs", DefaultHistoryRuns, 0, math.MaxInt32)
	hp.MaxEvents = v.integer("max_events", DefaultHistoryEvents, 0, MaxHistoryEvents)
	return hp, v.err
}

// SessionRewindParams are session.rewind's params: Turns (1 or more)
// or UserMessageID (exactly one of them), Files, DryRun; SessionID, when
// given, must be the current session's (the caller checks).
type SessionRewindParams struct {
	SessionID     string
	Turns         int
	UserMessageID string
	Files, DryRun bool
}

// ParseSessionRewind checks session.rewind's params.
func ParseSessionRewind(p gjson.Result) (SessionRewindParams, *Error) {
	v := newParams(p)
	rp := SessionRewindParams{SessionID: v.str("session_id", false)}
	rp.UserMessageID = v.str("user_message_id", false)
	rp.Turns = v.integer("turns", 0, 1, math.MaxInt32)
	rp.Files = v.boolean("files", false)
	rp.DryRun = v.boolean("dry_run", false)
	switch {
	case v.err != nil:
	case rp.Turns == 0 && rp.UserMessageID == "":
		v.fail("turns or user_message_id is required")
	case rp.Turns != 0 && rp.UserMessageID != "":
		v.fail("give turns or user_message_id, not both")
	}
	return rp, v.err
}

// checkProvider accepts an absent provider or "anthropic".
func (v *params) checkProvider() {
	if pr := v.str("provider", false); v.err == nil && pr != "" && pr != Provider {
		v.fail(`provider must be "` + Provider + `" (the only provider of the Claude Code CLI)`)
	}
}

// ParseModelList checks model.list's params: provider, if given, must be
// "anthropic"; include_details is a boolean.
func ParseModelList(p gjson.Result) (includeDetails bool, err *Error) {
	v := newParams(p)
	v.checkProvider()
	includeDetails = v.boolean("include_details", false)
	return includeDetails, v.err
}

// ParseModelSet checks model.set's params: name is required; provider, if
// given, must be "anthropic".
func ParseModelSet(p gjson.Result) (name string, err *Error) {
	v := newParams(p)
	name = strings.TrimSpace(v.str("name", true))
	v.checkProvider()
	if v.err == nil && !mapping.ValidModelName(name) {
		v.fail("name must be " + mapping.ModelNameRule)
	}
	return name, v.err
}

// ParseMCPList checks mcp.list's params: scope is "loaded" (default) or
// "configured".
func ParseMCPList(p gjson.Result) (scope string, err *Error) {
	v := newParams(p)
	scope = v.str("scope", false)
	switch {
	case v.err != nil:
	case scope == "":
		scope = "loaded"
	case scope != "loaded" && scope != "configured":
		v.fail(`scope must be "loaded" or "configured"`)
	}
	return scope, v.err
}

// SkillsListParams are skills.list's params.
type SkillsListParams struct {
	CWD         string
	ForceReload bool
}

// ParseSkillsList checks skills.list's params.
func ParseSkillsList(p gjson.Result) (SkillsListParams, *Error) {
	v := newParams(p)
	sp := SkillsListParams{CWD: v.str("cwd", false), ForceReload: v.boolean("force_reload", false)}
	return sp, v.err
}

// ContextInspectParams are context.inspect's params.
type ContextInspectParams struct {
	IncludeAgents, IncludeSkills bool
}

// ParseContextInspect checks context.inspect's params.
func ParseContextInspect(p gjson.Result) (ContextInspectParams, *Error) {
	v := newParams(p)
	cp := ContextInspectParams{
		IncludeAgents: v.boolean("include_agents", false),
		IncludeSkills: v.boolean("include_skills", false),
	}
	return cp, v.err
}

// ShellExecParams are shell.exec's params.
type ShellExecParams struct {
	// Command is the command line the user typed; it runs as the single
	// argument of `$SHELL -c` (or /bin/sh -c), never pasted into another
	// string. Exactly one of Command and Argv is set.
	Command string
	// Argv, an extension, runs a program directly with these arguments,
	// without a shell.
	Argv []string
	// TimeoutSeconds is in (0, 300]: default 120, larger values clamped to
	// 300.
	TimeoutSeconds float64
	// CWD, when set, is resolved against the session's working directory
	// and must stay inside it.
	CWD string
}

// ParseShellExec checks shell.exec's params.
func ParseShellExec(p gjson.Result) (ShellExecParams, *Error) {
	v := newParams(p)
	var sp ShellExecParams
	argv := v.get("argv")
	if argv.Exists() && argv.Type != gjson.Null {
		if v.get("command").Exists() {
			v.fail("give command or argv, not both")
		}
		if v.err == nil && !argv.IsArray() {
			v.fail("argv must be an array of strings")
		}
		argv.ForEach(func(_, a gjson.Result) bool {
			if a.Type != gjson.String || strings.IndexByte(a.Str, 0) >= 0 {
				v.fail("argv must be an array of strings without NUL bytes")
				return false
			}
			sp.Argv = append(sp.Argv, a.Str)
			return true
		})
		if v.err == nil && (len(sp.Argv) == 0 || sp.Argv[0] == "") {
			v.fail("argv must name a program")
		}
	} else {
		sp.Command = v.str("command", true)
		if v.err == nil && strings.IndexByte(sp.Command, 0) >= 0 {
			v.fail("command must not contain NUL bytes")
		}
		if v.err == nil && len(sp.Command) > MaxShellCommandBytes {
			v.fail("command is over " + itoa(MaxShellCommandBytes) + " bytes")
		}
	}
	sp.TimeoutSeconds = DefaultShellTimeout
	if r := v.get("timeout_seconds"); r.Exists() && r.Type != gjson.Null && v.err == nil {
		switch {
		case r.Type != gjson.Number || r.Num <= 0 || math.IsInf(r.Num, 0):
			v.fail("timeout_seconds must be a positive number")
		default:
			sp.TimeoutSeconds = min(r.Num, MaxShellTimeout)
		}
	}
	sp.CWD = v.str("cwd", false)
	if v.err == nil && strings.IndexByte(sp.CWD, 0) >= 0 {
		v.fail("cwd must not contain NUL bytes")
	}
	return sp, v.err
}

// CommandPreview is a command as shell.exec reports it: trimmed, at most
// 400 runes, then "...[truncated]".
func CommandPreview(command string) string {
	s := strings.TrimSpace(command)
	n := 0
	for i := range s {
		if n == commandPreviewMaxRunes {
			return s[:i] + "...[truncated]"
		}
		n++
	}
	return s
}

// ParseRequestCancel checks request.cancel's params: id, the id of the
// UI's own earlier request (string or number), is required. It returns
// the id's raw JSON.
func ParseRequestCancel(p gjson.Result) (id string, err *Error) {
	v := newParams(p)
	r := v.get("id")
	switch {
	case v.err != nil:
	case !r.Exists() || r.Type == gjson.Null:
		v.fail("id is required")
	case r.Type != gjson.String && r.Type != gjson.Number:
		v.fail("id must be a string or a number")
	default:
		id = r.Raw
	}
	return id, v.err
}

// ParseUIContext checks ui.context.update's params (an object of at most
// 1 MiB) and returns them raw.
func ParseUIContext(p gjson.Result) (string, *Error) {
	v := newParams(p)
	if v.err == nil && !p.Exists() {
		v.fail("params are required")
	}
	if v.err == nil && len(p.Raw) > maxUIContextBytes {
		v.fail("params are over " + itoa(maxUIContextBytes) + " bytes")
	}
	return p.Raw, v.err
}
