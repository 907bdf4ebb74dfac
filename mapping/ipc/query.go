package ipc

// The query message: a question for the CLI (its newer control requests)
// answered by exactly one query_result carrying the UI's id.

import (
	"github.com/ccbridge/ccbridge/mapping"
)

// Queries names what a query message may ask, each with the CLI
// control request it becomes.
var Queries = [...]struct{ Name, Subtype string }{
	{"file_suggestions", "file_suggestions"},    // text? → {suggestions:[{path}], cwd}
	{"context_usage", "get_context_usage"},      // → the CLI's context usage
	{"mcp_status", "mcp_status"},                // → {mcpServers:[{name, status, error?, …}]}
	{"mcp_reconnect", "mcp_reconnect"},          // server → {}
	{"mcp_toggle", "mcp_toggle"},                // server, enabled → {}
	{"session_title", "generate_session_title"}, // description, persist? → {title}
}

// query is an open query: the UI's id and what it asked.
type query struct{ id, name string }

// Codes of a failed query_result besides CodeControlRequestFailed.
const (
	QueryTimeout   = "control_timeout" // the CLI did not answer in time
	QueryNoSession = "no_session"      // no CLI runs to ask
	QueryCLIExited = "child_exited"    // the CLI exited before it answered
	QueryRestarted = "restarted"       // the CLI was replaced (a session command) before it answered
)

func (t *Translator) query(p *parser) (Command, error) {
	qid, err := p.nonEmpty("id")
	if err != nil {
		return Command{}, err
	}
	name, err := p.nonEmpty("query")
	if err != nil {
		return Command{}, err
	}
	subtype := ""
	for _, q := range Queries {
		if q.Name == name {
			subtype = q.Subtype
		}
	}
	if subtype == "" {
		return Command{}, p.fail(CodeInvalidValue, "query", "unknown query "+quote(name)+"; expected file_suggestions, context_usage, mcp_status, mcp_reconnect, mcp_toggle or session_title")
	}
	id := t.newRequestID()
	var stdin []byte
	switch name {
	case "file_suggestions":
		text, _, err := p.optStr("text")
		if err != nil {
			return Command{}, err
		}
		stdin = mapping.AppendFileSuggestions(nil, id, text)
	case "mcp_reconnect", "mcp_toggle":
		server, err := p.nonEmpty("server")
		if err != nil {
			return Command{}, err
		}
		if name == "mcp_reconnect" {
			stdin = mapping.AppendMCPReconnect(nil, id, server)
			break
		}
		enabled, err := p.boolean("enabled")
		if err != nil {
			return Command{}, err
		}
		stdin = mapping.AppendMCPToggle(nil, id, server, enabled)
	case "session_title":
		desc, err := p.nonEmpty("description")
		if err != nil {
			return Command{}, err
		}
		persist, err := p.optBool("persist")
		if err != nil {
			return Command{}, err
		}
		stdin = mapping.AppendGenerateSessionTitle(nil, id, desc, persist)
	default:
		stdin = mapping.AppendControlRequest(nil, id, `{"subtype":"`+subtype+`"}`)
	}
	t.Track(id, subtype)
	t.queries[id] = query{id: qid, name: name}
	return Command{Kind: CmdQuery, RequestID: id, Stdin: stdin}, nil
}

// queryAnswer is the query_result of the CLI's answer to a query.
func (t *Translator) queryAnswer(q query, ev *mapping.Event) []byte {
	if ev.IsError {
		msg := ev.Body.Get("error").Str
		if msg == "" {
			msg = "the CLI refused the query"
		}
		return appendQueryFailed(q, CodeControlRequestFailed, msg)
	}
	l := newLine(TypeQueryResult, len(ev.Body.Raw)+96)
	l.str("id", q.id)
	l.str("query", q.name)
	l.boolean("ok", true)
	if r := ev.Body.Get("response"); r.IsObject() {
		l.raw("result", r)
	} else {
		l.rawStr("result", "{}") // mcp_reconnect and mcp_toggle answer with no body
	}
	return l.done()
}

func appendQueryFailed(q query, code, msg string) []byte {
	l := newLine(TypeQueryResult, len(msg)+128)
	l.str("id", q.id)
	l.str("query", q.name)
	l.boolean("ok", false)
	l.str("code", code)
	l.str("error", msg)
	return l.done()
}

// FailQuery ends the query whose control request is requestID with a
// failed query_result (code, msg) and forgets the request; nil when
// requestID is no open query.
func (t *Translator) FailQuery(requestID, code, msg string) []byte {
	q, ok := t.queries[requestID]
	if !ok {
		return nil
	}
	delete(t.queries, requestID)
	delete(t.outbound, requestID)
	return appendQueryFailed(q, code, msg)
}

// FailQueries ends every open query with a failed query_result, for a
// CLI that will answer none: call it before ResetProcess.
func (t *Translator) FailQueries(code, msg string, out [][]byte) [][]byte {
	for id := range t.queries {
		out = append(out, t.FailQuery(id, code, msg))
	}
	return out
}

// IsQuery reports whether requestID is an open query's control request.
func (t *Translator) IsQuery(requestID string) bool {
	_, ok := t.queries[requestID]
	return ok
}
