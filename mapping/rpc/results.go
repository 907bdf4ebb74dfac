package rpc

import (
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// ServerInfo is what initialize reports about ccbridge and the session.
type ServerInfo struct {
	Name, Version string
	Diagnostics   bool
	// The session, as far as known (raw JSON strings from the CLI, or
	// plain strings where noted).
	SessionID  string // plain
	CWD        string // plain
	CLIVersion string // plain
	Model      string // plain
	// Theme is the CLI's theme ("dark", "light", …): tui.theme.
	Theme string
}

// AppendInitializeResult appends initialize's response.
func AppendInitializeResult(dst []byte, id string, s ServerInfo) []byte {
	o := result(id, 768)
	o.str("protocol_version", ProtocolVersion)
	o.obj("server")
	o.str("name", s.Name)
	o.str("version", s.Version)
	o.end('}')
	o.obj("server_capabilities")
	for _, c := range [...]struct {
		k string
		v bool
	}{
		{"supports_run_cancel", true},
		{"supports_run_steer", true},
		{"supports_ui_requests", true},
		{"supports_mcp_list", true},
		{"supports_skills_list", true},
		{"supports_context_inspect", true},
		{"supports_workspace_suggest", true},
		{"supports_mcp_actions", true},
		{"supports_session_title", true},
		{"supports_tool_call", true},
		{"supports_auth_logout", true},
		{"supports_shell_output", true},
		{"supports_shell_exec", true},
		{"supports_session_list", true},
		{"supports_session_history", true},
		{"supports_session_rewind", true},
		{"supports_model_list", true},
		{"supports_model_set", true},
		{"supports_run_context", true},
		{"supports_request_cancel", true},
		{"supports_diagnostics", s.Diagnostics},
	} {
		o.boolean(c.k, c.v)
	}
	o.end('}')
	o.obj("runtime")
	o.strOrNull("session_id", s.SessionID)
	o.strOrNull("cwd", s.CWD)
	o.strOrNull("claude_code_version", s.CLIVersion)
	o.strOrNull("model", s.Model)
	o.end('}')
	if s.Theme != "" {
		o.obj("tui")
		o.str("theme", s.Theme)
		o.end('}')
	}
	return append(dst, o.endNotification()...)
}

// AppendRunStartResult appends run.start's response {run_id}.
func AppendRunStartResult(dst []byte, id, runID string) []byte {
	o := result(id, len(runID)+16)
	o.str("run_id", runID)
	return append(dst, o.endNotification()...)
}

// AppendRunCancelResult appends run.cancel's response {ok, status}.
func AppendRunCancelResult(dst []byte, id string, ok bool, status string) []byte {
	o := result(id, 48)
	o.boolean("ok", ok)
	o.str("status", status)
	return append(dst, o.endNotification()...)
}

// AppendRunSteerResult appends run.steer's response: the run and the
// steer's own id (the uuid of the user message written to the CLI).
func AppendRunSteerResult(dst []byte, id, runID, steerID string) []byte {
	o := result(id, 96)
	o.boolean("ok", true)
	o.str("run_id", runID)
	o.str("steer_id", steerID)
	return append(dst, o.endNotification()...)
}

// AppendOKResult appends the response {"ok":ok} (request.cancel,
// ui.context.update).
func AppendOKResult(dst []byte, id string, ok bool) []byte {
	o := result(id, 16)
	o.boolean("ok", ok)
	return append(dst, o.endNotification()...)
}

// ModelList is what model.list reports.
type ModelList struct {
	Models         gjson.Result // the CLI's models array (list_models / initialize)
	Current        string       // the name last set (model.set, --model), or "default"
	Resolved       string       // the model id the CLI runs, "" if not known
	IncludeDetails bool
	// Window returns a model id's context window, 0 if not known.
	Window func(model string) int64
}

// AppendModelListResult appends model.list's response: {provider,
// models, current, current_resolved, details?}. models are the CLI's model
// names ("value") in the CLI's order (it gives no release dates).
func AppendModelListResult(dst []byte, id string, m ModelList) []byte {
	o := result(id, len(m.Models.Raw)+256)
	o.str("provider", Provider)
	o.arr("models")
	m.Models.ForEach(func(_, v gjson.Result) bool {
		if name := v.Get("value"); name.Type == gjson.String {
			o.elem()
			o.b = append(o.b, name.Raw...)
		}
		return true
	})
	o.end(']')
	o.str("current", m.Current)
	o.strOrNull("current_resolved", m.Resolved)
	if m.IncludeDetails {
		o.obj("details")
		m.Models.ForEach(func(_, v gjson.Result) bool {
			name := v.Get("value")
			if name.Type != gjson.String {
				return true
			}
			o.objEsc(name.Str)
			o.rawIf("display_name", v.Get("displayName"))
			o.rawIf("description", v.Get("description"))
			o.rawIf("resolved_model", v.Get("resolvedModel"))
			if m.Window != nil {
				if w := m.Window(v.Get("resolvedModel").Str); w > 0 {
					o.int("context_window", w)
				}
			}
			o.rawIf("supports_effort", v.Get("supportsEffort"))
			o.rawIf("supported_effort_levels", v.Get("supportedEffortLevels"))
			o.rawIf("supports_adaptive_thinking", v.Get("supportsAdaptiveThinking"))
			o.end('}')
			return true
		})
		o.end('}')
	}
	return append(dst, o.endNotification()...)
}

// KnownModel reports whether name is one of the CLI's model names or the
// id one resolves to.
func KnownModel(models gjson.Result, name string) bool {
	found := false
	models.ForEach(func(_, v gjson.Result) bool {
		if v.Get("value").Str == name || v.Get("resolvedModel").Str == name {
			found = true
			return false
		}
		return true
	})
	return found
}

// AppendModelSetResult appends model.set's response {provider, name,
// resolved_model}.
func AppendModelSetResult(dst []byte, id, name, resolved string) []byte {
	o := result(id, len(name)+len(resolved)+64)
	o.str("provider", Provider)
	o.str("name", name)
	o.strOrNull("resolved_model", resolved)
	return append(dst, o.endNotification()...)
}

// mcpStates maps the CLI's MCP server status to the seed's state.
var mcpStates = map[string]string{
	"connected":  "ready",
	"pending":    "connecting",
	"failed":     "error",
	"needs-auth": "auth_required",
	"disabled":   "disabled",
}

// AppendMCPListResult appends mcp.list's response from the CLI's
// mcp_status answer ({mcpServers:[{name, status, error?, transport,
// scope, tools?, …}]}).
func AppendMCPListResult(dst []byte, id string, status gjson.Result) []byte {
	servers := status.Get("mcpServers")
	o := result(id, len(servers.Raw)+64)
	o.arr("servers")
	servers.ForEach(func(_, s gjson.Result) bool {
		o.elem()
		o.b = append(o.b, '{')
		o.str("id", s.Get("name").Str)
		transport := s.Get("transport").Str
		if transport == "" {
			transport = s.Get("config.type").Str
		}
		if transport == "" {
			transport = "stdio"
		}
		o.str("transport", transport)
		switch scope := s.Get("scope").Str; scope {
		case "project", "local":
			o.str("source", "project")
		case "user":
			o.str("source", "global")
		default:
			if scope != "" {
				o.str("source", scope)
			}
		}
		st := s.Get("status").Str
		state, ok := mcpStates[st]
		if !ok {
			state = st
		}
		o.boolean("enabled", state != "disabled")
		o.str("state", state)
		if tools := s.Get("tools"); tools.IsArray() {
			o.int("tools", int64(len(tools.Array())))
		}
		o.rawIf("last_error", s.Get("error"))
		o.rawIf("server_info", s.Get("serverInfo"))
		o.end('}')
		return true
	})
	o.end(']')
	return append(dst, o.endNotification()...)
}

// Skill is one entry of skills.list.
type Skill struct {
	ID, Name, Description string
	Path, Dir             string // SKILL.md and its folder; "" for built-in skills
	Scope                 string // "repo", "user" or "builtin"
	MtimeMs               int64
}

// SkillError is a SKILL.md that could not be read.
type SkillError struct{ Path, Message string }

// AppendSkillsListResult appends skills.list's response.
func AppendSkillsListResult(dst []byte, id string, skills []Skill, errs []SkillError, truncated bool) []byte {
	o := result(id, 256*len(skills)+64)
	o.arr("skills")
	for _, s := range skills {
		o.elem()
		o.b = append(o.b, '{')
		o.str("id", s.ID)
		o.str("name", s.Name)
		o.str("description", s.Description)
		o.str("path", s.Path)
		o.str("dir", s.Dir)
		o.str("scope", s.Scope)
		o.int("mtime_ms", s.MtimeMs)
		o.end('}')
	}
	o.end(']')
	o.arr("errors")
	for _, e := range errs {
		o.elem()
		o.b = append(o.b, '{')
		o.str("path", e.Path)
		o.str("message", e.Message)
		o.end('}')
	}
	o.end(']')
	o.boolean("truncated", truncated)
	return append(dst, o.endNotification()...)
}

// ContextInspect is what context.inspect reports.
type ContextInspect struct {
	WorkingDir, SandboxRoot string
	UIContext               gjson.Result // the latest ui_context / ui.context.update, may not exist
	SessionID               string
	Meta                    Metadata
	Model                   string       // the model id in use (wins over Meta.Model, which is as of the last turn)
	Agents                  gjson.Result // the CLI's agents (initialize), when asked
	Skills                  []Skill      // when asked
	Usage                   gjson.Result // the CLI's get_context_usage answer, may not exist
}

// AppendContextInspectResult appends context.inspect's response.
func AppendContextInspectResult(dst []byte, id string, c ContextInspect) []byte {
	o := result(id, 2048)
	o.str("runtime_working_dir", c.WorkingDir)
	o.str("runtime_sandbox_root", c.SandboxRoot)
	if u := c.UIContext; u.IsObject() {
		o.obj("ui_context")
		o.rawIf("cwd", u.Get("cwd"))
		o.rawIf("workspace_root", u.Get("workspace_root"))
		o.rawIf("active_file_path", u.Get("active_file.path"))
		o.end('}')
	}
	o.strOrNull("session_id", c.SessionID)
	if c.Model != "" || c.Meta.Model == "" {
		o.strOrNull("model", c.Model)
	} else {
		o.raw("model", c.Meta.Model)
	}
	o.raw("permission_mode", c.Meta.PermissionMode)
	o.raw("claude_code_version", c.Meta.Version)
	o.raw("tools", c.Meta.Tools)
	o.raw("mcp_servers", c.Meta.MCPServers)
	if c.Agents.Exists() {
		o.raw("agents", c.Agents.Raw)
	}
	if c.Skills != nil {
		o.arr("skills")
		for _, s := range c.Skills {
			o.elem()
			o.b = append(o.b, '{')
			o.str("name", s.Name)
			o.str("description", s.Description)
			o.str("scope", s.Scope)
			o.end('}')
		}
		o.end(']')
	}
	if u := c.Usage; u.IsObject() {
		o.obj("context_usage")
		total, maxT := u.Get("totalTokens").Int(), u.Get("maxTokens").Int()
		o.int("total_tokens", total)
		o.int("max_tokens", maxT)
		if maxT > 0 {
			o.float("context_left_percent", round(min(max(100*float64(maxT-total)/float64(maxT), 0), 100), 1))
		}
		o.rawIf("model", u.Get("model"))
		o.arr("categories")
		u.Get("categories").ForEach(func(_, cat gjson.Result) bool {
			o.elem()
			o.b = append(o.b, '{')
			o.rawIf("name", cat.Get("name"))
			o.rawIf("tokens", cat.Get("tokens"))
			o.rawIf("kind", cat.Get("kind"))
			o.end('}')
			return true
		})
		o.end(']')
		o.end('}')
	}
	return append(dst, o.endNotification()...)
}

// ShellResult is what shell.exec reports.
type ShellResult struct {
	CommandPreview string
	ExitCode       int    // -1 when the command did not exit normally (exit_code null)
	Signal         string // "SIGTERM", …; "" when none
	Stdout, Stderr string // whole, or head + marker + tail when truncated
	TruncStdout    bool
	TruncStderr    bool
	DurationMs     int64
	TimedOut       bool
	CWD            string
	// The cache ids of the whole output of a stream that was truncated
	// (shell.output reads it back), or "".
	StdoutCacheID, StderrCacheID string
}

// AppendShellExecResult appends shell.exec's response.
func AppendShellExecResult(dst []byte, id string, r ShellResult) []byte {
	o := result(id, len(r.Stdout)+len(r.Stderr)+len(r.CommandPreview)+256)
	o.str("command_preview", r.CommandPreview)
	if r.ExitCode < 0 {
		o.raw("exit_code", "null")
	} else {
		o.int("exit_code", int64(r.ExitCode))
	}
	o.strOrNull("signal", r.Signal)
	o.str("stdout", r.Stdout)
	o.str("stderr", r.Stderr)
	o.obj("truncated")
	o.boolean("stdout", r.TruncStdout)
	o.boolean("stderr", r.TruncStderr)
	o.boolean("combined", r.TruncStdout || r.TruncStderr)
	o.end('}')
	o.int("duration_ms", r.DurationMs)
	o.boolean("timed_out", r.TimedOut)
	o.str("cwd", r.CWD)
	o.strIf("stdout_cache_id", r.StdoutCacheID)
	o.strIf("stderr_cache_id", r.StderrCacheID)
	return append(dst, o.endNotification()...)
}

// SessionInfo is one entry of session.list.
type SessionInfo struct {
	SessionID       string
	UpdatedAt       string // RFC 3339
	CreatedAt       string // RFC 3339, "" if not known
	RunID           string // the last run of this connection in the session, if any
	MessageCount    int
	LastUserMessage string
	Title           string // the CLI's title of the session (mapping.SessionSummary.Title), "" if none
}

// AppendSessionListResult appends session.list's response.
func AppendSessionListResult(dst []byte, id string, sessions []SessionInfo) []byte {
	o := result(id, 256*len(sessions)+32)
	o.arr("sessions")
	for _, s := range sessions {
		o.elem()
		o.b = append(o.b, '{')
		o.str("session_id", s.SessionID)
		o.str("updated_at", s.UpdatedAt)
		o.strIf("created_at", s.CreatedAt)
		o.strIf("run_id", s.RunID)
		o.int("message_count", int64(s.MessageCount))
		o.strIf("last_user_message", s.LastUserMessage)
		o.strIf("title", s.Title)
		o.end('}')
	}
	o.end(']')
	return append(dst, o.endNotification()...)
}

// AppendSessionHistoryResult appends session.history's response.
func AppendSessionHistoryResult(dst []byte, id string, runs, events int, truncated bool) []byte {
	o := result(id, 64)
	o.int("runs", int64(runs))
	o.int("events_sent", int64(events))
	o.boolean("truncated", truncated)
	return append(dst, o.endNotification()...)
}

// SessionRewindResult is session.rewind's result.
type SessionRewindResult struct {
	DryRun                bool
	UserMessageID, Prompt string
	Turns, Kept           int
	Files                 []string // nil: files were not asked for
	Insertions, Deletions int
}

// AppendSessionRewindResult appends session.rewind's response
// {dry_run, user_message_id, prompt, turns, kept, files|null, insertions,
// deletions}.
func AppendSessionRewindResult(dst []byte, id string, r SessionRewindResult) []byte {
	o := result(id, 256)
	o.boolean("dry_run", r.DryRun)
	o.str("user_message_id", r.UserMessageID)
	o.str("prompt", r.Prompt)
	o.int("turns", int64(r.Turns))
	o.int("kept", int64(r.Kept))
	if r.Files == nil {
		o.raw("files", "null")
	} else {
		o.arr("files")
		for _, f := range r.Files {
			o.elem()
			o.b = jsonw.String(o.b, f)
		}
		o.end(']')
	}
	o.int("insertions", int64(r.Insertions))
	o.int("deletions", int64(r.Deletions))
	return append(dst, o.endNotification()...)
}
