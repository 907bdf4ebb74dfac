package acp

import (
	"math"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
)

// Rewind in ACP: two extension methods (ACP's convention: a name that
// starts with "_"), named and shaped as claude-agent-acp's proposal
// (pull request #966) names them, so that a client written for one
// works with the other:
//
//	_session/rewind_points {sessionId} -> {points:[{messageId,resumeAtMessageId,text,index}]}
//	_session/rewind {sessionId, messageId | numTurns, mode?, dryRun?}
//	  -> {files?:{canRewind,filesChanged,insertions,deletions}, conversation?:{rewound,messagesDropped}, _meta}
//
// numTurns (turns counted back from the last) is ccbridge's, as an
// alternative to messageId. initialize says ccbridge serves them:
// agentCapabilities._meta.ccbridge.rewind.
const (
	MethodSessionRewind       = "_session/rewind"
	MethodSessionRewindPoints = "_session/rewind_points"
)

// The modes of _session/rewind.
const (
	RewindFiles        = "files" // the files only (the default, as in claude-agent-acp)
	RewindConversation = "conversation"
	RewindBoth         = "both"
)

// RewindParams are _session/rewind's params.
type RewindParams struct {
	SessionID string
	MessageID string // the user message to go back to (a rewind point's messageId)
	NumTurns  int    // or how many turns to drop, counted back from the last
	Mode      string // RewindFiles, RewindConversation or RewindBoth
	DryRun    bool
}

// Files and Conversation say what the mode asks for.
func (p RewindParams) Files() bool        { return p.Mode != RewindConversation }
func (p RewindParams) Conversation() bool { return p.Mode != RewindFiles }

// ParseRewind checks _session/rewind's params: sessionId, exactly one of
// messageId (a non-empty string) and numTurns (a whole number of 1 or
// more), mode (default "files") and dryRun (a boolean).
func ParseRewind(params gjson.Result) (RewindParams, *Error) {
	var p RewindParams
	const m = MethodSessionRewind + ": "
	if !params.IsObject() {
		return p, InvalidParams(m + "params must be an object")
	}
	sid, mid, n := params.Get("sessionId"), params.Get("messageId"), params.Get("numTurns")
	if sid.Type != gjson.String || sid.Str == "" {
		return p, InvalidParams(m + "sessionId must be a non-empty string")
	}
	p.SessionID = sid.Str
	hasMID, hasN := mid.Exists() && mid.Type != gjson.Null, n.Exists() && n.Type != gjson.Null
	switch {
	case hasMID && hasN:
		return p, InvalidParams(m + "give messageId or numTurns, not both")
	case hasMID:
		if mid.Type != gjson.String || mid.Str == "" {
			return p, InvalidParams(m + "messageId must be a non-empty string")
		}
		p.MessageID = mid.Str
	case hasN:
		if n.Type != gjson.Number || n.Num != math.Trunc(n.Num) || n.Num < 1 || n.Num > math.MaxInt32 {
			return p, InvalidParams(m + "numTurns must be a whole number of 1 or more")
		}
		p.NumTurns = int(n.Num)
	default:
		return p, InvalidParams(m + "messageId or numTurns is required")
	}
	switch mode := params.Get("mode"); {
	case !mode.Exists() || mode.Type == gjson.Null:
		p.Mode = RewindFiles
	case mode.Str == RewindFiles || mode.Str == RewindConversation || mode.Str == RewindBoth:
		p.Mode = mode.Str
	default:
		return p, InvalidParams(m + `mode must be "files", "conversation" or "both"`)
	}
	switch d := params.Get("dryRun"); d.Type {
	case gjson.True:
		p.DryRun = true
	case gjson.False, gjson.Null:
	default:
		if d.Exists() {
			return p, InvalidParams(m + "dryRun must be a boolean")
		}
	}
	return p, nil
}

// AppendRewindPoints appends _session/rewind_points' result: the
// conversation's user messages, oldest first; messageId is the one
// _session/rewind takes, resumeAtMessageId is null (the CLI needs none).
func AppendRewindPoints(dst []byte, points []mapping.Prompt) []byte {
	dst = append(dst, `{"points":[`...)
	for i, p := range points {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonw.NewObj(dst).Str("messageId", p.UUID).Raw("resumeAtMessageId", "").Str("text", p.Text).Int("index", int64(i)).End()
	}
	return append(dst, "]}"...)
}

// RewindResult is what a _session/rewind did (or, DryRun, would do).
type RewindResult struct {
	Params                RewindParams
	MessageID, Prompt     string
	Turns                 int
	Files                 []string
	Insertions, Deletions int
}

// AppendRewindResult appends _session/rewind's result: "files" when the
// mode asks for them, "conversation" when it asks for it (rewound false
// in a dry run; messagesDropped counts the turns dropped, or that would
// be), and _meta.ccbridge with the user message gone back to and its
// text.
func AppendRewindResult(dst []byte, r RewindResult) []byte {
	o := jsonw.NewObj(dst)
	if r.Params.Files() {
		files := r.Files
		if files == nil {
			files = []string{}
		}
		o.Raw("files", jsonw.NewObj(nil).Bool("canRewind", true).Strings("filesChanged", files).
			Int("insertions", int64(r.Insertions)).Int("deletions", int64(r.Deletions)).String())
	}
	if r.Params.Conversation() {
		o.Raw("conversation", jsonw.NewObj(nil).Bool("rewound", !r.Params.DryRun).Int("messagesDropped", int64(r.Turns)).String())
	}
	meta := jsonw.NewObj(nil).Bool("dryRun", r.Params.DryRun).Str("messageId", r.MessageID).Str("prompt", r.Prompt).Int("turns", int64(r.Turns)).String()
	o.Raw("_meta", `{"ccbridge":`+meta+`}`)
	return o.End()
}
