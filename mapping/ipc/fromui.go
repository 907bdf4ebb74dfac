package ipc

import (
	"slices"
	"strings"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// MaxImageBytes is the largest image attachment accepted, decoded.
const MaxImageBytes = mapping.MaxImageBytes

// FromUI parses one inbound ipc line into a Command. A bad line (malformed
// JSON, an unknown type, a missing field or a field of the wrong type, an
// answer to a request that is not open, a refused attachment) returns an
// *Error and nothing is to be written to the CLI.
//
// Answers (tool_approval, question_answer) settle their request, and the
// control requests FromUI builds are tracked; see Command.RequestID.
func (t *Translator) FromUI(line []byte) (Command, error) {
	root, cerr := CheckLine(line)
	if cerr != nil {
		return Command{}, cerr
	}
	p := parser{root: root}
	typ, err := p.str("type")
	if err != nil {
		return Command{}, err
	}
	p.typ = typ
	switch typ {
	case "user_message":
		cmd, err := t.userMessage(&p)
		return t.withEcho(cmd, err, root)
	case "steer":
		// A user message the adapter writes into the running turn.
		cmd, err := t.userMessage(&p)
		if err == nil {
			cmd.Kind = CmdSteer
		}
		return t.withEcho(cmd, err, root)
	case "tool_approval":
		cmd, err := t.toolApproval(&p)
		return t.withEcho(cmd, err, root)
	case "question_answer":
		cmd, err := t.questionAnswer(&p)
		return t.withEcho(cmd, err, root)
	case "interrupt":
		cancelQueued, err := p.optBool("cancel_queued")
		if err != nil {
			return Command{}, err
		}
		id := t.request("interrupt")
		return Command{Kind: CmdInterrupt, RequestID: id, Stdin: mapping.AppendInterrupt(nil, id, cancelQueued)}, nil
	case "permission_mode":
		mode, err := p.nonEmpty("mode")
		if err != nil {
			return Command{}, err
		}
		id := t.request("set_permission_mode")
		return Command{Kind: CmdPermissionMode, RequestID: id, Stdin: mapping.AppendSetPermissionMode(nil, id, mode)}, nil
	case "model_change":
		model, err := p.nonEmpty("model")
		if err != nil {
			return Command{}, err
		}
		if !mapping.ValidModelName(model) {
			return Command{}, p.fail(CodeInvalidValue, "model", "model must be "+mapping.ModelNameRule)
		}
		id := t.request("set_model")
		return Command{Kind: CmdModelChange, RequestID: id, Stdin: mapping.AppendSetModel(nil, id, model)}, nil
	case "stop_task":
		task, err := p.nonEmpty("task_id")
		if err != nil {
			return Command{}, err
		}
		id := t.request("stop_task")
		return Command{Kind: CmdStopTask, RequestID: id, Stdin: mapping.AppendStopTask(nil, id, task)}, nil
	case "session_command":
		return t.sessionCommand(&p)
	case "rewind":
		return rewind(&p)
	case "query":
		return t.query(&p)
	}
	return Command{}, &Error{Code: CodeUnknownType, Field: "type", Inbound: typ,
		Message: "unknown message type " + quote(typ) + "; expected user_message, steer, tool_approval, question_answer, interrupt, permission_mode, model_change, stop_task, session_command, rewind or query"}
}

// withEcho adds the echo of a message FromUI took (Options.Echo).
func (t *Translator) withEcho(cmd Command, err error, root gjson.Result) (Command, error) {
	if err == nil && t.opt.Echo {
		cmd.Echo = echo(cmd.Kind.String(), root)
	}
	return cmd, err
}

func (t *Translator) request(subtype string) string {
	id := t.newRequestID()
	t.Track(id, subtype)
	return id
}

func (t *Translator) userMessage(p *parser) (Command, error) {
	text, hasText, err := p.optStr("text")
	if err != nil {
		return Command{}, err
	}
	atts, err := p.optArray("attachments")
	if err != nil {
		return Command{}, err
	}
	blocks := make([]mapping.Block, 0, 4)
	if text != "" {
		blocks = append(blocks, mapping.Block{Kind: mapping.BlockText, Text: text})
	}
	i := 0
	var aerr error
	atts.ForEach(func(_, a gjson.Result) bool {
		var b mapping.Block
		b, aerr = attachment(p, i, a)
		if aerr != nil {
			return false
		}
		blocks = append(blocks, b)
		i++
		return true
	})
	if aerr != nil {
		return Command{}, aerr
	}
	if len(blocks) == 0 {
		if hasText {
			return Command{}, p.fail(CodeInvalidValue, "text", p.typ+" has empty text and no attachments")
		}
		return Command{}, p.fail(CodeMissingField, "text", p.typ+" needs text or attachments")
	}
	var opt mapping.UserOptions
	if t.opt.NewPromptID != nil {
		opt.UUID = t.opt.NewPromptID()
	}
	return Command{Kind: CmdUserMessage, PromptID: opt.UUID, Stdin: mapping.AppendUserMessage(nil, opt, blocks...)}, nil
}

func attachment(p *parser, i int, a gjson.Result) (mapping.Block, error) {
	field := "attachments." + itoa(i)
	if !a.IsObject() {
		return mapping.Block{}, p.fail(CodeWrongType, field, field+" must be an object")
	}
	ap := parser{root: a, typ: p.typ, prefix: field + "."}
	kind, err := ap.str("kind")
	if err != nil {
		return mapping.Block{}, err
	}
	switch kind {
	case "text":
		if _, _, err := ap.optStr("name"); err != nil {
			return mapping.Block{}, err
		}
		content, err := ap.str("content")
		if err != nil {
			return mapping.Block{}, err
		}
		return mapping.Block{Kind: mapping.BlockText, Text: content}, nil
	case "image":
		mt, err := ap.str("media_type")
		if err != nil {
			return mapping.Block{}, err
		}
		content, err := ap.str("content")
		if err != nil {
			return mapping.Block{}, err
		}
		if why := mapping.CheckImage(mt, content); why != "" {
			return mapping.Block{}, p.fail(CodeAttachmentRefused, field, field+" refused: "+why)
		}
		return mapping.Block{Kind: mapping.BlockImage, MediaType: mt, Data: content}, nil
	}
	return mapping.Block{}, p.fail(CodeInvalidValue, field+".kind", field+".kind must be \"image\" or \"text\", not "+quote(kind))
}

// pendingFor looks up the open request an answer refers to.
func (t *Translator) pendingFor(p *parser, requestID string) (*Pending, error) {
	if pr, ok := t.pending[requestID]; ok {
		return pr, nil
	}
	msg := "no open permission or question request has request_id " + quote(requestID)
	if t.wasSettled(requestID) {
		msg = "request " + quote(requestID) + " was already answered or withdrawn"
	}
	e := p.fail(CodeUnknownRequest, "request_id", msg)
	e.RequestID = requestID
	return nil, e
}

func (t *Translator) toolApproval(p *parser) (Command, error) {
	id, err := p.str("request_id")
	if err != nil {
		return Command{}, err
	}
	decision, err := p.str("decision")
	if err != nil {
		return Command{}, err
	}
	if decision != "allow" && decision != "deny" {
		return Command{}, p.fail(CodeInvalidValue, "decision", "decision must be \"allow\" or \"deny\", not "+quote(decision))
	}
	input, err := p.optKind("updatedInput", '{', "an object")
	if err != nil {
		return Command{}, err
	}
	perms, err := p.optKind("updatedPermissions", '[', "an array")
	if err != nil {
		return Command{}, err
	}
	message, _, err := p.optStr("message")
	if err != nil {
		return Command{}, err
	}
	interrupt, err := p.optBool("interrupt")
	if err != nil {
		return Command{}, err
	}
	pr, err := t.pendingFor(p, id)
	if err != nil {
		return Command{}, err
	}
	cmd := Command{Kind: CmdToolApproval, RequestID: pr.RequestID}
	if decision == "allow" {
		a := mapping.Allow{UpdatedInput: input.Raw, UpdatedPermissions: perms.Raw, ToolUseID: pr.ToolUseID}
		if a.UpdatedInput == "" {
			a.UpdatedInput = pr.Input
		}
		cmd.Stdin = mapping.AppendAllow(nil, pr.RequestID, a)
	} else {
		cmd.Stdin = mapping.AppendDeny(nil, pr.RequestID, mapping.Deny{Message: message, Interrupt: interrupt, ToolUseID: pr.ToolUseID})
		cmd.EndsTurn = interrupt
	}
	t.Settle(pr.RequestID)
	return cmd, nil
}

func (t *Translator) questionAnswer(p *parser) (Command, error) {
	id, err := p.str("request_id")
	if err != nil {
		return Command{}, err
	}
	answers, err := p.optKind("answers", '{', "an object")
	if err != nil {
		return Command{}, err
	}
	if !answers.Exists() {
		return Command{}, p.fail(CodeMissingField, "answers", "question_answer needs answers")
	}
	pr, err := t.pendingFor(p, id)
	if err != nil {
		return Command{}, err
	}
	if pr.ToolName != "AskUserQuestion" {
		e := p.fail(CodeInvalidValue, "request_id", "request "+quote(id)+" asks for "+pr.ToolName+", not a question; answer it with tool_approval")
		e.RequestID = id
		return Command{}, e
	}
	input := pr.Input
	if !strings.HasPrefix(input, "{") {
		input = "{}"
	}
	var questions []string
	gjson.Get(input, "questions.#.question").ForEach(func(_, q gjson.Result) bool {
		questions = append(questions, q.Str)
		return true
	})

	// answers: question text → label, or labels joined with "," for a
	// multi-select question (the form the CLI expects: "Red,Blue").
	ans := make([]byte, 0, len(answers.Raw)+2)
	ans = append(ans, '{')
	var aerr error
	answers.ForEach(func(k, v gjson.Result) bool {
		field := "answers." + k.Str
		if len(questions) > 0 && !slices.Contains(questions, k.Str) {
			aerr = p.fail(CodeInvalidValue, field, "no question "+quote(k.Str)+" in request "+quote(id))
			return false
		}
		if len(ans) > 1 {
			ans = append(ans, ',')
		}
		ans = jsonw.String(ans, k.Str)
		ans = append(ans, ':')
		switch {
		case v.Type == gjson.String:
			ans = jsonw.String(ans, v.Str)
		case v.IsArray():
			var sb strings.Builder
			n := 0
			v.ForEach(func(_, label gjson.Result) bool {
				if label.Type != gjson.String {
					aerr = p.fail(CodeWrongType, field, field+" must hold only strings")
					return false
				}
				if n > 0 {
					sb.WriteByte(',')
				}
				sb.WriteString(label.Str)
				n++
				return true
			})
			if aerr == nil && n == 0 {
				aerr = p.fail(CodeInvalidValue, field, field+" selects no label")
			}
			ans = jsonw.String(ans, sb.String())
		default:
			aerr = p.fail(CodeWrongType, field, field+" must be a string or an array of strings")
		}
		return aerr == nil
	})
	if aerr != nil {
		return Command{}, aerr
	}
	if len(ans) == 1 {
		return Command{}, p.fail(CodeInvalidValue, "answers", "answers is empty")
	}
	ans = append(ans, '}')
	updated, serr := sjson.SetRawBytes([]byte(input), "answers", ans)
	if serr != nil {
		return Command{}, p.fail(CodeInvalidValue, "answers", "cannot add answers to the question's input: "+serr.Error())
	}
	cmd := Command{Kind: CmdQuestionAnswer, RequestID: pr.RequestID,
		Stdin: mapping.AppendAllow(nil, pr.RequestID, mapping.Allow{UpdatedInput: string(updated), ToolUseID: pr.ToolUseID})}
	t.Settle(pr.RequestID)
	return cmd, nil
}

func (t *Translator) sessionCommand(p *parser) (Command, error) {
	command, err := p.str("command")
	if err != nil {
		return Command{}, err
	}
	sid, _, err := p.optStr("session_id")
	if err != nil {
		return Command{}, err
	}
	if sid != "" && !mapping.ValidSessionID(sid) {
		return Command{}, p.fail(CodeInvalidValue, "session_id", "session_id must be a session id (a UUID)")
	}
	r := Respawn{SessionID: sid}
	switch command {
	case "new":
		r = Respawn{Mode: RespawnNew}
	case "continue":
		r = Respawn{Mode: RespawnContinue}
	case "resume":
		r.Mode = RespawnResume
		if r.SessionID == "" {
			r.SessionID = t.sessionID
		}
		if r.SessionID == "" {
			return Command{}, p.fail(CodeMissingField, "session_id", "resume needs a session_id (no session is known yet)")
		}
	case "fork":
		r.Mode = RespawnFork
		if r.SessionID == "" {
			r.SessionID = t.sessionID
		}
	default:
		return Command{}, p.fail(CodeInvalidValue, "command", "command must be new, resume, continue or fork, not "+quote(command))
	}
	return Command{Kind: CmdSessionCommand, Respawn: r}, nil
}

// rewind reads {"type":"rewind","turns":N | "user_message_id":ID,
// "files"?:bool, "dry_run"?:bool}: exactly one of turns (an integer of 1
// or more) and user_message_id (a non-empty string).
func rewind(p *parser) (Command, error) {
	var r Rewind
	id, hasID, err := p.optStr("user_message_id")
	if err != nil {
		return Command{}, err
	}
	turns := p.get("turns")
	hasTurns := turns.Exists() && turns.Type != gjson.Null
	switch {
	case hasID && hasTurns:
		return Command{}, p.fail(CodeInvalidValue, "turns", "rewind takes turns or user_message_id, not both")
	case hasID && id == "":
		return Command{}, p.fail(CodeInvalidValue, "user_message_id", "field \"user_message_id\" must not be empty")
	case hasID:
		r.UserMessageID = id
	case !hasTurns:
		return Command{}, p.fail(CodeMissingField, "turns", "rewind needs turns or user_message_id")
	case turns.Type != gjson.Number:
		return Command{}, p.fail(CodeWrongType, "turns", "field \"turns\" must be a number, not "+jsonType(turns))
	default:
		n := turns.Int()
		if float64(n) != turns.Num || n < 1 || n > 1<<30 {
			return Command{}, p.fail(CodeInvalidValue, "turns", "field \"turns\" must be a whole number of 1 or more")
		}
		r.Turns = int(n)
	}
	if r.Files, err = p.optBool("files"); err != nil {
		return Command{}, err
	}
	if r.DryRun, err = p.optBool("dry_run"); err != nil {
		return Command{}, err
	}
	return Command{Kind: CmdRewind, Rewind: r}, nil
}

// parser reads the fields of one inbound object and words the errors.
type parser struct {
	root   gjson.Result
	typ    string // the inbound type, once known
	prefix string // for nested objects: "attachments.0."
}

func (p *parser) fail(code ErrorCode, field, msg string) *Error {
	return &Error{Code: code, Field: field, Inbound: p.typ, Message: msg}
}

func (p *parser) where() string {
	if p.typ == "" {
		return "the message"
	}
	return p.typ
}

func (p *parser) get(name string) gjson.Result {
	return p.root.Get(gjson.Escape(name))
}

// str reads a required string field.
func (p *parser) str(name string) (string, error) {
	v := p.get(name)
	if !v.Exists() || v.Type == gjson.Null {
		return "", p.fail(CodeMissingField, p.prefix+name, p.where()+" is missing field "+quote(p.prefix+name))
	}
	if v.Type != gjson.String {
		return "", p.fail(CodeWrongType, p.prefix+name, "field "+quote(p.prefix+name)+" must be a string, not "+jsonType(v))
	}
	return v.Str, nil
}

// nonEmpty reads a required, non-empty string field.
func (p *parser) nonEmpty(name string) (string, error) {
	s, err := p.str(name)
	if err == nil && s == "" {
		err = p.fail(CodeInvalidValue, p.prefix+name, "field "+quote(p.prefix+name)+" must not be empty")
	}
	return s, err
}

// optStr reads an optional string field; null counts as absent.
func (p *parser) optStr(name string) (string, bool, error) {
	v := p.get(name)
	if !v.Exists() || v.Type == gjson.Null {
		return "", false, nil
	}
	if v.Type != gjson.String {
		return "", false, p.fail(CodeWrongType, p.prefix+name, "field "+quote(p.prefix+name)+" must be a string, not "+jsonType(v))
	}
	return v.Str, true, nil
}

func (p *parser) optBool(name string) (bool, error) {
	v := p.get(name)
	switch v.Type {
	case gjson.True:
		return true, nil
	case gjson.False, gjson.Null:
		return false, nil
	}
	if !v.Exists() {
		return false, nil
	}
	return false, p.fail(CodeWrongType, p.prefix+name, "field "+quote(p.prefix+name)+" must be a boolean, not "+jsonType(v))
}

// boolean reads a required boolean field.
func (p *parser) boolean(name string) (bool, error) {
	v := p.get(name)
	if !v.Exists() || v.Type == gjson.Null {
		return false, p.fail(CodeMissingField, p.prefix+name, p.where()+" is missing field "+quote(p.prefix+name))
	}
	return p.optBool(name)
}

func (p *parser) optArray(name string) (gjson.Result, error) {
	return p.optKind(name, '[', "an array")
}

// optKind reads an optional object ('{') or array ('[') field; null counts
// as absent.
func (p *parser) optKind(name string, open byte, what string) (gjson.Result, error) {
	v := p.get(name)
	if !v.Exists() || v.Type == gjson.Null {
		return gjson.Result{}, nil
	}
	if v.Type != gjson.JSON || len(v.Raw) == 0 || v.Raw[0] != open {
		return gjson.Result{}, p.fail(CodeWrongType, p.prefix+name, "field "+quote(p.prefix+name)+" must be "+what+", not "+jsonType(v))
	}
	return v, nil
}

func jsonType(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	if v.IsArray() {
		return "an array"
	}
	return "an object"
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return string(jsonw.String(nil, s))
}

func itoa(n int) string { return string(jsonw.Int(nil, int64(n))) }
