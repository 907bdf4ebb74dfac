package lane004

import (
	"errors"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping"
)

// Turns gathers a session file's turns for thread/read (includeTurns):
// a turn begins at each prompt of the main conversation (a user entry
// with text and no tool results) and holds its items: the userMessage,
// then the agentMessage, reasoning and toolCall items of the assistant's
// answer, in order. Entries of subagents, meta entries and compaction
// summaries are left out.
type Turns struct {
	turns []turn
}

type turn struct {
	id    string
	items []string // raw item objects
	tools map[string]int
	// blocks counts each message's content blocks: an item's id is
	// "<message id>/<block index>", as the live events name it.
	blocks map[string]int
}

// itemID names the next content block of message msgID.
func (t *turn) itemID(msgID string) string {
	if t.blocks == nil {
		t.blocks = make(map[string]int)
	}
	n := t.blocks[msgID]
	t.blocks[msgID] = n + 1
	return msgID + "/" + strconv.Itoa(n)
}

// Line takes one line of the session file; lines that are not JSON are
// skipped.
func (t *Turns) Line(line []byte) {
	if !gjson.ValidBytes(line) {
		return
	}
	e := gjson.ParseBytes(line)
	if mapping.SideEntry(e) {
		return
	}
	content := e.Get("message.content")
	switch e.Get("type").Str {
	case "user":
		var texts []string
		results := false
		if content.Type == gjson.String {
			texts = append(texts, content.Str)
		}
		content.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "text":
				texts = append(texts, b.Get("text").Str)
			case "tool_result":
				results = true
				t.toolResult(b)
			}
			return true
		})
		if results || len(texts) == 0 || strings.HasPrefix(texts[0], "[Request interrupted") {
			return
		}
		id := e.Get("uuid").Str
		item := jsonw.NewObj(nil).Str("type", "userMessage").Str("id", id)
		parts := make([]string, len(texts))
		for i, s := range texts {
			parts[i] = jsonw.NewObj(nil).Str("type", "text").Str("text", s).String()
		}
		item.Raw("content", "["+strings.Join(parts, ",")+"]")
		t.turns = append(t.turns, turn{id: id, items: []string{item.String()}})
	case "assistant":
		if len(t.turns) == 0 {
			return
		}
		cur := &t.turns[len(t.turns)-1]
		msgID := e.Get("message.id").Str
		content.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "text":
				cur.items = append(cur.items, jsonw.NewObj(nil).Str("type", "agentMessage").Str("id", cur.itemID(msgID)).Str("text", b.Get("text").Str).String())
			case "thinking":
				cur.items = append(cur.items, jsonw.NewObj(nil).Str("type", "reasoning").Str("id", cur.itemID(msgID)).Strings("content", []string{b.Get("thinking").Str}).String())
			case "tool_use":
				cur.itemID(msgID) // a block of its own; its item is named by the tool use id
				if cur.tools == nil {
					cur.tools = make(map[string]int)
				}
				id := b.Get("id").Str
				cur.tools[id] = len(cur.items)
				cur.items = append(cur.items, jsonw.NewObj(nil).Str("type", "toolCall").Str("id", id).Str("tool", b.Get("name").Str).Raw("input", b.Get("input").Raw).Str("status", "inProgress").String())
			}
			return true
		})
	}
}

// toolResult completes the toolCall item a tool_result answers.
func (t *Turns) toolResult(b gjson.Result) {
	if len(t.turns) == 0 {
		return
	}
	cur := &t.turns[len(t.turns)-1]
	i, ok := cur.tools[b.Get("tool_use_id").Str]
	if !ok {
		return
	}
	status := "completed"
	if b.Get("is_error").Bool() {
		status = "failed"
	}
	item, _ := sjson.Set(cur.items[i], "status", status)
	if c := b.Get("content"); c.Exists() {
		item, _ = sjson.SetRaw(item, "result", c.Raw)
	}
	cur.items[i] = item
}

// Append appends the turns as a JSON array: each {"id","items","status":
// "completed","error":null}.
func (t *Turns) Append(dst []byte) []byte {
	dst = append(dst, '[')
	for i, turn := range t.turns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonw.NewObj(dst).Str("id", turn.id).Raw("items", "["+strings.Join(turn.items, ",")+"]").Str("status", "completed").Raw("error", "").End()
	}
	return append(dst, ']')
}

// WithAnswers is an AskUserQuestion's input with the user's answers
// added ({"answers":{question: answer}}), as the CLI takes them back in
// updatedInput.
func WithAnswers(input, answers string) (string, error) {
	if !gjson.Valid(input) || !gjson.Parse(input).IsObject() {
		return "", errors.New("the question's input is not an object")
	}
	if !gjson.Valid(answers) || !gjson.Parse(answers).IsObject() {
		return "", errors.New("answers must be an object of question → answer")
	}
	return sjson.SetRaw(input, "answers", answers)
}
