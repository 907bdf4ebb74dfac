package acp

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
)

// PendingKind says how a can_use_tool request is put to the client.
type PendingKind uint8

const (
	// PendingTool: session/request_permission with allow once, allow
	// always and reject.
	PendingTool PendingKind = iota
	// PendingPlan: ExitPlanMode as session/request_permission whose
	// options are the modes to go on in (or keep planning).
	PendingPlan
	// PendingQuestion: AskUserQuestion as session/request_permission, one
	// request per question, whose options are the answers.
	PendingQuestion
	// PendingElicitation: AskUserQuestion as one elicitation/create form.
	PendingElicitation
)

// Option ids of the permission requests.
const (
	OptionAllow       = "allow"
	OptionAllowAlways = "allow_always"
	OptionReject      = "reject"
	answerPrefix      = "answer_"
)

// Pending is one can_use_tool request forwarded to the client, from the
// request until the client's answer (or its withdrawal). Not safe for
// concurrent use.
type Pending struct {
	Kind        PendingKind
	RequestID   string // the CLI's request_id
	ToolUseID   string
	ToolName    string
	Input       string // the request's input (raw JSON object)
	Suggestions string // permission_suggestions (raw JSON array), or ""
	Parent      string // the subagent's Agent tool_use id, or ""

	question int    // PendingQuestion: the question being asked
	answers  []byte // PendingQuestion: the answers so far, `{"q":"label",…`
}

// NewPending makes the Pending for a can_use_tool event. elicitation says
// whether the client renders elicitation forms (questions then go there).
func NewPending(ev *mapping.Event, elicitation bool) *Pending {
	req := ev.Body
	p := &Pending{
		RequestID: ev.RequestID,
		ToolUseID: ev.ToolUseID,
		ToolName:  ev.ToolName,
		Input:     req.Get("input").Raw,
		Parent:    ev.ParentToolUseID,
	}
	if p.Input == "" || !gjson.Parse(p.Input).IsObject() {
		p.Input = "{}"
	}
	if s := req.Get("permission_suggestions"); s.IsArray() && len(s.Array()) > 0 {
		p.Suggestions = s.Raw
	}
	switch ev.ToolName {
	case "ExitPlanMode":
		p.Kind = PendingPlan
	case "AskUserQuestion":
		if gjson.Get(p.Input, "questions.#").Int() > 0 {
			p.Kind = PendingQuestion
			if elicitation {
				p.Kind = PendingElicitation
			}
		}
	}
	return p
}

// Method is the client method the request goes out with.
func (p *Pending) Method() string {
	if p.Kind == PendingElicitation {
		return MethodElicitationCreate
	}
	return MethodRequestPermission
}

// AppendParams appends the params of the request to the client:
// session/request_permission (a tool call and its options) or
// elicitation/create (a form with one field per question).
func (t *Translator) AppendParams(dst []byte, p *Pending) []byte {
	if p.Kind == PendingElicitation {
		return t.appendElicitation(dst, p)
	}
	input := gjson.Parse(p.Input)
	dst = append(dst, `{"sessionId":`...)
	dst = append(dst, t.sid...)
	dst = append(dst, `,"toolCall":{`...)
	fields := appendToolFields(nil, p.ToolUseID, p.ToolName, input, "pending")
	if p.Kind == PendingQuestion {
		// The title is the question being asked.
		q := input.Get("questions." + strconv.Itoa(p.question))
		fields = fields[:0]
		fields = append(fields, `,"toolCallId":`...)
		fields = jsonw.String(fields, p.ToolUseID)
		fields = append(fields, `,"title":`...)
		fields = jsonw.String(fields, q.Get("question").Str)
		fields = append(fields, `,"kind":"other","status":"pending","rawInput":`...)
		fields = append(fields, input.Raw...)
		fields = appendQuestionContent(fields, q)
	} else {
		fields = appendInputContent(fields, p.ToolName, input, t.toolPlan(p.ToolUseID))
	}
	dst = append(dst, fields[1:]...) // without the leading comma
	dst = appendMeta(dst, p.ToolName, t.parentOf(p))
	dst = append(dst, `},"options":`...)
	switch p.Kind {
	case PendingPlan:
		dst = append(dst, `[{"optionId":"acceptEdits","name":"Yes, and auto-accept edits","kind":"allow_always"},`+
			`{"optionId":"default","name":"Yes, and manually approve edits","kind":"allow_once"},`+
			`{"optionId":"plan","name":"No, keep planning","kind":"reject_once"}]`...)
	case PendingQuestion:
		dst = append(dst, '[')
		k := 0
		input.Get("questions." + strconv.Itoa(p.question) + ".options").ForEach(func(_, o gjson.Result) bool {
			dst = append(dst, `{"optionId":"`+answerPrefix...)
			dst = strconv.AppendInt(dst, int64(k), 10)
			k++
			dst = append(dst, `","name":`...)
			dst = jsonw.String(dst, o.Get("label").Str)
			dst = append(dst, `,"kind":"allow_once"},`...)
			return true
		})
		dst = append(dst, `{"optionId":"reject","name":"Don't answer","kind":"reject_once"}]`...)
	default:
		dst = append(dst, `[{"optionId":"allow_always","name":"Always Allow","kind":"allow_always"},`+
			`{"optionId":"allow","name":"Allow","kind":"allow_once"},`+
			`{"optionId":"reject","name":"Reject","kind":"reject_once"}]`...)
	}
	return append(dst, '}')
}

// parentOf is the subagent a request comes from: the parent of its tool.
func (t *Translator) parentOf(p *Pending) string {
	if tl := t.tools[p.ToolUseID]; tl != nil {
		return tl.parent
	}
	return p.Parent
}

func appendQuestionContent(dst []byte, q gjson.Result) []byte {
	var sb strings.Builder
	if h := q.Get("header").Str; h != "" {
		sb.WriteString(h)
		sb.WriteString("\n")
	}
	q.Get("options").ForEach(func(_, o gjson.Result) bool {
		sb.WriteString("- ")
		sb.WriteString(o.Get("label").Str)
		if d := o.Get("description").Str; d != "" {
			sb.WriteString(": ")
			sb.WriteString(d)
		}
		sb.WriteString("\n")
		return true
	})
	return appendTextContent(dst, strings.TrimSpace(sb.String()))
}

// appendElicitation appends elicitation/create params: a form with one
// field per question ("q0", "q1", …), a single choice (string with oneOf)
// or several (array of anyOf).
func (t *Translator) appendElicitation(dst []byte, p *Pending) []byte {
	qs := gjson.Get(p.Input, "questions")
	msg := "Claude Code has questions for you"
	if n := qs.Get("#").Int(); n == 1 {
		msg = qs.Get("0.question").Str
	}
	dst = append(dst, `{"sessionId":`...)
	dst = append(dst, t.sid...)
	dst = append(dst, `,"toolCallId":`...)
	dst = jsonw.String(dst, p.ToolUseID)
	dst = append(dst, `,"mode":"form","message":`...)
	dst = jsonw.String(dst, msg)
	dst = append(dst, `,"requestedSchema":{"type":"object","properties":{`...)
	var required []byte
	k := 0
	qs.ForEach(func(_, q gjson.Result) bool {
		if required != nil {
			dst = append(dst, ',')
			required = append(required, ',')
		}
		key := "q" + strconv.Itoa(k)
		k++
		required = jsonw.String(required, key)
		dst = jsonw.String(dst, key)
		title := q.Get("header").Str
		if title == "" {
			title = q.Get("question").Str
		}
		multi := q.Get("multiSelect").Bool()
		if multi {
			dst = append(dst, `:{"type":"array","title":`...)
		} else {
			dst = append(dst, `:{"type":"string","title":`...)
		}
		dst = jsonw.String(dst, title)
		dst = append(dst, `,"description":`...)
		dst = jsonw.String(dst, q.Get("question").Str)
		if multi {
			dst = append(dst, `,"items":{"anyOf":[`...)
		} else {
			dst = append(dst, `,"oneOf":[`...)
		}
		i := 0
		q.Get("options").ForEach(func(_, o gjson.Result) bool {
			if i > 0 {
				dst = append(dst, ',')
			}
			i++
			dst = append(dst, `{"const":`...)
			dst = jsonw.String(dst, o.Get("label").Str)
			dst = append(dst, `,"title":`...)
			dst = jsonw.String(dst, o.Get("label").Str)
			if d := o.Get("description").Str; d != "" {
				dst = append(dst, `,"description":`...)
				dst = jsonw.String(dst, d)
			}
			dst = append(dst, '}')
			return true
		})
		if multi {
			dst = append(dst, "]}}"...)
		} else {
			dst = append(dst, "]}"...)
		}
		return true
	})
	dst = append(dst, `},"required":[`...)
	dst = append(dst, required...)
	return append(dst, "]}}"...)
}

// Answer is what the client's response to a Pending comes to.
type Answer struct {
	// Stdin is the control_response for the CLI; nil when Next is set.
	Stdin []byte
	// Allowed says the tool may run (the tool call is then in progress).
	Allowed bool
	// Next: another question follows; send the Pending's params again.
	Next bool
	// Note describes an answer ccbridge had to interpret (an unknown
	// option, an error response), for the log; "" otherwise.
	Note string
}

// Answer maps the client's response (the "result" of a JSON-RPC response;
// for an error response, errMsg is its message and result is empty) to the
// CLI's answer:
//
//   - allow → allow (the original input runs); allow always → allow with
//     the CLI's own permission_suggestions as updatedPermissions, or a
//     session rule for the tool when it offered none;
//   - reject, cancelled, an error response, an unknown option → deny;
//   - ExitPlanMode: a mode → allow with a setMode permission update; plan
//     → deny ("keep planning");
//   - a question: the chosen labels → allow with updatedInput = input plus
//     "answers" {question: label} (several labels joined with ","); reject
//     or cancel → deny.
func (p *Pending) Answer(result gjson.Result, errMsg string) Answer {
	deny := func(msg, note string) Answer {
		return Answer{Stdin: mapping.AppendDeny(nil, p.RequestID, mapping.Deny{Message: msg, ToolUseID: p.ToolUseID}), Note: note}
	}
	if errMsg != "" {
		return deny("The client could not ask the user: "+errMsg, "error response: "+errMsg)
	}
	if p.Kind == PendingElicitation {
		return p.elicitationAnswer(result)
	}
	outcome := result.Get("outcome")
	switch outcome.Get("outcome").Str {
	case "cancelled":
		return deny("The user cancelled the permission request", "")
	case "selected":
	default:
		return deny(mapping.DefaultDenyMessage, "response without a known outcome: "+firstLine(result.Raw, 200))
	}
	opt := outcome.Get("optionId").Str
	allow := func(a mapping.Allow) Answer {
		a.ToolUseID = p.ToolUseID
		return Answer{Stdin: mapping.AppendAllow(nil, p.RequestID, a), Allowed: true}
	}
	switch p.Kind {
	case PendingPlan:
		switch opt {
		case "acceptEdits", "default", "auto", "bypassPermissions":
			return allow(mapping.Allow{UpdatedPermissions: `[{"type":"setMode","mode":"` + opt + `","destination":"session"}]`})
		case "plan":
			return deny("The user wants to keep planning", "")
		}
	case PendingQuestion:
		if opt == OptionReject {
			return deny("The user did not answer the question", "")
		}
		k, ok := strings.CutPrefix(opt, answerPrefix)
		input := gjson.Parse(p.Input)
		q := input.Get("questions." + strconv.Itoa(p.question))
		label := q.Get("options." + k + ".label")
		if !ok || k == "" || strings.ContainsAny(k, ".#*?|@\\") || label.Type != gjson.String {
			break
		}
		if p.answers == nil {
			p.answers = append(p.answers, '{')
		} else {
			p.answers = append(p.answers, ',')
		}
		p.answers = jsonw.String(p.answers, q.Get("question").Str)
		p.answers = append(p.answers, ':')
		p.answers = jsonw.String(p.answers, label.Str)
		p.question++
		if p.question < int(input.Get("questions.#").Int()) {
			return Answer{Next: true}
		}
		return p.allowAnswers(append(p.answers, '}'))
	default:
		switch opt {
		case OptionAllow:
			return allow(mapping.Allow{})
		case OptionAllowAlways:
			perms := p.Suggestions
			if perms == "" {
				perms = `[{"type":"addRules","rules":[{"toolName":` + string(jsonw.String(nil, p.ToolName)) + `}],"behavior":"allow","destination":"session"}]`
			}
			return allow(mapping.Allow{UpdatedPermissions: perms})
		case OptionReject:
			return deny("The user rejected this tool call", "")
		}
	}
	return deny(mapping.DefaultDenyMessage, "unknown optionId "+quote(opt))
}

func (p *Pending) elicitationAnswer(result gjson.Result) Answer {
	deny := func(msg string) Answer {
		return Answer{Stdin: mapping.AppendDeny(nil, p.RequestID, mapping.Deny{Message: msg, ToolUseID: p.ToolUseID})}
	}
	switch result.Get("action").Str {
	case "accept":
	case "decline":
		return deny("The user declined to answer")
	default:
		return deny("The user dismissed the question")
	}
	content := result.Get("content")
	ans := []byte{'{'}
	n, k := 0, 0
	gjson.Get(p.Input, "questions").ForEach(func(_, q gjson.Result) bool {
		v := content.Get("q" + strconv.Itoa(k))
		k++
		var label string
		switch {
		case v.Type == gjson.String:
			label = v.Str
		case v.IsArray():
			var parts []string
			v.ForEach(func(_, s gjson.Result) bool {
				if s.Type == gjson.String {
					parts = append(parts, s.Str)
				}
				return true
			})
			label = strings.Join(parts, ",")
		case v.Exists() && v.Type != gjson.Null:
			label = v.String()
		}
		if label == "" {
			return true
		}
		if n > 0 {
			ans = append(ans, ',')
		}
		n++
		ans = jsonw.String(ans, q.Get("question").Str)
		ans = append(ans, ':')
		ans = jsonw.String(ans, label)
		return true
	})
	if n == 0 {
		return Answer{Stdin: mapping.AppendDeny(nil, p.RequestID, mapping.Deny{Message: "The user gave no answer", ToolUseID: p.ToolUseID}),
			Note: "accepted elicitation without answers"}
	}
	return p.allowAnswers(append(ans, '}'))
}

func (p *Pending) allowAnswers(answers []byte) Answer {
	updated, err := sjson.SetRawBytes([]byte(p.Input), "answers", answers)
	if err != nil {
		return Answer{Stdin: mapping.AppendDeny(nil, p.RequestID, mapping.Deny{ToolUseID: p.ToolUseID}), Note: "cannot add answers: " + err.Error()}
	}
	return Answer{Stdin: mapping.AppendAllow(nil, p.RequestID, mapping.Allow{UpdatedInput: string(updated), ToolUseID: p.ToolUseID}), Allowed: true}
}
