package acp

import (
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// Mode is one of the CLI's permission modes, offered as an ACP session
// mode and as the values of the "mode" config option.
type Mode struct {
	ID, Name, Description string
}

// The CLI's permission modes, in the order they are offered.
var allModes = []Mode{
	{"default", "Default", "Ask before each tool that changes files or runs commands"},
	{"acceptEdits", "Accept Edits", "Edit files without asking; ask for other tools"},
	{"plan", "Plan Mode", "Explore and plan without changing anything"},
	{"dontAsk", "Don't Ask", "Never ask: run only what the permission rules allow, deny the rest"},
	{"auto", "Auto", "Let Claude Code decide which tool calls are safe to run without asking"},
	{"bypassPermissions", "Bypass Permissions", "Run every tool without asking"},
}

// Modes returns the modes ccbridge offers. bypassPermissions is left out
// when the CLI would refuse it (running as root without IS_SANDBOX=1), and
// auto unless the CLI says a model supports it.
func Modes(allowBypass, allowAuto bool) []Mode {
	var ms []Mode
	for _, m := range allModes {
		if (m.ID == "bypassPermissions" && !allowBypass) || (m.ID == "auto" && !allowAuto) {
			continue
		}
		ms = append(ms, m)
	}
	return ms
}

// Model is one entry of the CLI's model list (initialize response
// "models"), offered as a value of the "model" config option.
type Model struct {
	Value, Name, Description string
}

// Config is the session state the client can see and change: the current
// permission mode and model, and what they may be set to.
type Config struct {
	Mode   string
	Model  string
	Modes  []Mode
	Models []Model
}

// ConfigFromInitialize builds a session's Config from the CLI's initialize
// response (the control_response's inner "response"): its models, its
// current permission mode and whether any model supports auto mode.
// model is the model the session was started with ("" for the default).
func ConfigFromInitialize(resp gjson.Result, model string, allowBypass bool) Config {
	c := Config{Mode: "default", Model: "default"}
	if m := resp.Get("current_permission_mode").Str; m != "" {
		c.Mode = m
	}
	if model != "" {
		c.Model = model
	}
	auto := false
	resp.Get("models").ForEach(func(_, m gjson.Result) bool {
		v := m.Get("value").Str
		if v == "" {
			return true
		}
		name := m.Get("displayName").Str
		if name == "" {
			name = v
		}
		c.Models = append(c.Models, Model{Value: v, Name: name, Description: m.Get("description").Str})
		if m.Get("supportsAutoMode").Bool() {
			auto = true
		}
		return true
	})
	c.Modes = Modes(allowBypass, auto || c.Mode == "auto")
	if !c.HasMode(c.Mode) {
		c.Modes = append(c.Modes, modeByID(c.Mode))
	}
	if len(c.Models) == 0 || !c.HasModel(c.Model) {
		c.Models = append(c.Models, Model{Value: c.Model, Name: c.Model})
	}
	return c
}

func modeByID(id string) Mode {
	for _, m := range allModes {
		if m.ID == id {
			return m
		}
	}
	return Mode{ID: id, Name: id}
}

// HasMode reports whether id is one of the offered modes.
func (c *Config) HasMode(id string) bool {
	for _, m := range c.Modes {
		if m.ID == id {
			return true
		}
	}
	return false
}

// HasModel reports whether v is one of the offered models.
func (c *Config) HasModel(v string) bool {
	for _, m := range c.Models {
		if m.Value == v {
			return true
		}
	}
	return false
}

// AppendModes appends the SessionModeState object.
func (c *Config) AppendModes(dst []byte) []byte {
	dst = append(dst, `{"currentModeId":`...)
	dst = jsonw.String(dst, c.Mode)
	dst = append(dst, `,"availableModes":[`...)
	for i, m := range c.Modes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = jsonw.String(dst, m.ID)
		dst = append(dst, `,"name":`...)
		dst = jsonw.String(dst, m.Name)
		if m.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = jsonw.String(dst, m.Description)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// Config option ids.
const (
	ConfigMode  = "mode"
	ConfigModel = "model"
)

// AppendConfigOptions appends the full config option array: the
// permission mode and the model, both "select".
func (c *Config) AppendConfigOptions(dst []byte) []byte {
	dst = append(dst, `[{"id":"mode","name":"Mode","description":"How Claude Code asks for permission","category":"mode","type":"select","currentValue":`...)
	dst = jsonw.String(dst, c.Mode)
	dst = append(dst, `,"options":[`...)
	for i, m := range c.Modes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendSelectOption(dst, m.ID, m.Name, m.Description)
	}
	dst = append(dst, `]},{"id":"model","name":"Model","category":"model","type":"select","currentValue":`...)
	dst = jsonw.String(dst, c.Model)
	dst = append(dst, `,"options":[`...)
	for i, m := range c.Models {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendSelectOption(dst, m.Value, m.Name, m.Description)
	}
	return append(dst, "]}]"...)
}

func appendSelectOption(dst []byte, value, name, desc string) []byte {
	dst = append(dst, `{"value":`...)
	dst = jsonw.String(dst, value)
	dst = append(dst, `,"name":`...)
	dst = jsonw.String(dst, name)
	if desc != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonw.String(dst, desc)
	}
	return append(dst, '}')
}

// AppendSetupResult appends the result of session/new (with sessionID),
// session/load or session/resume (sessionID ""): the modes and the config
// options.
func (c *Config) AppendSetupResult(dst []byte, sessionID string) []byte {
	dst = append(dst, '{')
	if sessionID != "" {
		dst = append(dst, `"sessionId":`...)
		dst = jsonw.String(dst, sessionID)
		dst = append(dst, ',')
	}
	dst = append(dst, `"modes":`...)
	dst = c.AppendModes(dst)
	dst = append(dst, `,"configOptions":`...)
	dst = c.AppendConfigOptions(dst)
	return append(dst, '}')
}

// AppendSetConfigResult appends the session/set_config_option result.
func (c *Config) AppendSetConfigResult(dst []byte) []byte {
	dst = append(dst, `{"configOptions":`...)
	dst = c.AppendConfigOptions(dst)
	return append(dst, '}')
}

// SessionSetup holds the validated params shared by session/new, load,
// resume and fork (SessionID is then the session forked).
type SessionSetup struct {
	SessionID string   // load and resume
	CWD       string   // absolute
	AddDirs   []string // additionalDirectories, absolute
	MCPConfig string   // the JSON for --mcp-config (ccbridge hands it over in a private file), or "" when there are no servers
}

// ParseSessionSetup validates the params of session/new, session/load,
// session/resume or session/fork (the last three need a sessionId).
// mcpServers is required for new and load, optional for resume and fork.
func ParseSessionSetup(method string, params gjson.Result) (SessionSetup, *Error) {
	var s SessionSetup
	if !params.IsObject() {
		return s, InvalidParams(method + " needs params")
	}
	if method != MethodSessionNew {
		id := params.Get("sessionId")
		if id.Type != gjson.String || id.Str == "" {
			return s, InvalidParams(method + ": sessionId must be a non-empty string")
		}
		s.SessionID = id.Str
	}
	cwd := params.Get("cwd")
	if cwd.Type != gjson.String || !filepath.IsAbs(cwd.Str) {
		return s, InvalidParams(method + ": cwd must be an absolute path")
	}
	s.CWD = filepath.Clean(cwd.Str)
	dirs := params.Get("additionalDirectories")
	if dirs.Exists() && dirs.Type != gjson.Null {
		if !dirs.IsArray() {
			return s, InvalidParams(method + ": additionalDirectories must be an array of absolute paths")
		}
		var bad bool
		dirs.ForEach(func(_, d gjson.Result) bool {
			if d.Type != gjson.String || !filepath.IsAbs(d.Str) {
				bad = true
				return false
			}
			s.AddDirs = append(s.AddDirs, d.Str)
			return true
		})
		if bad {
			return s, InvalidParams(method + ": additionalDirectories must hold absolute paths")
		}
	}
	mcp := params.Get("mcpServers")
	if !mcp.Exists() || mcp.Type == gjson.Null {
		if method != MethodSessionResume && method != MethodSessionFork {
			return s, InvalidParams(method + ": mcpServers is required (an empty array for none)")
		}
		return s, nil
	}
	cfg, err := MCPConfig(mcp)
	if err != nil {
		err.Message = method + ": " + err.Message
		return s, err
	}
	s.MCPConfig = cfg
	return s, nil
}

// MCPConfig turns ACP mcpServers into the JSON the CLI takes with
// --mcp-config: {"mcpServers":{name:{"type":"stdio","command","args","env":{}}
// | {"type":"http"|"sse","url","headers":{}}}}. An empty array gives "".
func MCPConfig(servers gjson.Result) (string, *Error) {
	if !servers.IsArray() {
		return "", InvalidParams("mcpServers must be an array")
	}
	dst := []byte(`{"mcpServers":{`)
	n := 0
	var err *Error
	seen := map[string]bool{}
	servers.ForEach(func(_, s gjson.Result) bool {
		if !s.IsObject() {
			err = InvalidParams("each of mcpServers must be an object")
			return false
		}
		name := s.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			err = InvalidParams("an MCP server needs a non-empty name")
			return false
		}
		if seen[name.Str] {
			err = InvalidParams("two MCP servers are named " + quote(name.Str))
			return false
		}
		seen[name.Str] = true
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = jsonw.String(dst, name.Str)
		typ := s.Get("type").Str
		switch typ {
		case "http", "sse":
			url := s.Get("url")
			if url.Type != gjson.String || url.Str == "" {
				err = InvalidParams("MCP server " + quote(name.Str) + " needs a url")
				return false
			}
			dst = append(dst, `:{"type":"`...)
			dst = append(dst, typ...)
			dst = append(dst, `","url":`...)
			dst = jsonw.String(dst, url.Str)
			dst = append(dst, `,"headers":`...)
			dst, err = appendNameValues(dst, s.Get("headers"), "headers")
		case "", "stdio":
			cmd := s.Get("command")
			if cmd.Type != gjson.String || cmd.Str == "" {
				err = InvalidParams("MCP server " + quote(name.Str) + " needs a command")
				return false
			}
			dst = append(dst, `:{"type":"stdio","command":`...)
			dst = jsonw.String(dst, cmd.Str)
			dst = append(dst, `,"args":[`...)
			args := s.Get("args")
			if args.Exists() && !args.IsArray() {
				err = InvalidParams("MCP server " + quote(name.Str) + ": args must be an array of strings")
				return false
			}
			i := 0
			args.ForEach(func(_, a gjson.Result) bool {
				if a.Type != gjson.String {
					err = InvalidParams("MCP server " + quote(name.Str) + ": args must be an array of strings")
					return false
				}
				if i > 0 {
					dst = append(dst, ',')
				}
				i++
				dst = jsonw.String(dst, a.Str)
				return true
			})
			dst = append(dst, `],"env":`...)
			if err == nil {
				dst, err = appendNameValues(dst, s.Get("env"), "env")
			}
		default:
			err = InvalidParams("MCP server " + quote(name.Str) + " has unknown type " + quote(typ))
			return false
		}
		dst = append(dst, '}')
		return err == nil
	})
	if err != nil {
		return "", err
	}
	if n == 0 {
		return "", nil
	}
	return string(append(dst, "}}"...)), nil
}

// appendNameValues turns [{name, value}] into {name: value}.
func appendNameValues(dst []byte, list gjson.Result, what string) ([]byte, *Error) {
	dst = append(dst, '{')
	if list.Exists() && list.Type != gjson.Null && !list.IsArray() {
		return dst, InvalidParams(what + " must be an array of {name, value}")
	}
	i := 0
	var err *Error
	list.ForEach(func(_, nv gjson.Result) bool {
		name, value := nv.Get("name"), nv.Get("value")
		if name.Type != gjson.String || value.Type != gjson.String {
			err = InvalidParams(what + " must be an array of {name, value} strings")
			return false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		i++
		dst = jsonw.String(dst, name.Str)
		dst = append(dst, ':')
		dst = jsonw.String(dst, value.Str)
		return true
	})
	return append(dst, '}'), err
}

// AppendAvailableCommands appends an available_commands_update
// notification from the CLI's initialize response "commands"
// ([{name, description, argumentHint}]); without them, from a system/init
// frame's "slash_commands" (names only). It returns dst unchanged when
// neither has any.
func AppendAvailableCommands(dst []byte, sessionID string, initResp, systemInit gjson.Result) []byte {
	cmds := initResp.Get("commands")
	names := systemInit.Get("slash_commands")
	if !cmds.IsArray() && !names.IsArray() {
		return dst
	}
	sid := jsonw.String(nil, sessionID)
	dst = appendUpdateHead(dst, sid, "available_commands_update")
	dst = append(dst, `,"availableCommands":[`...)
	n := 0
	add := func(name, desc, hint string) {
		if name == "" {
			return
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"name":`...)
		dst = jsonw.String(dst, name)
		dst = append(dst, `,"description":`...)
		dst = jsonw.String(dst, desc)
		if hint != "" {
			dst = append(dst, `,"input":{"hint":`...)
			dst = jsonw.String(dst, hint)
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	if cmds.IsArray() {
		cmds.ForEach(func(_, c gjson.Result) bool {
			add(c.Get("name").Str, c.Get("description").Str, c.Get("argumentHint").Str)
			return true
		})
	} else {
		names.ForEach(func(_, c gjson.Result) bool {
			add(c.Str, "", "")
			return true
		})
	}
	dst = append(dst, ']')
	return appendUpdateTail(dst)
}

func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return string(jsonw.String(nil, s))
}

// firstLine returns s up to its first newline, cut to max bytes at a rune
// boundary.
func firstLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
