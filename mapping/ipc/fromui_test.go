package ipc_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ccbridge/ccbridge/mapping/ipc"
	"github.com/tidwall/gjson"
)

func isCode(err error, code ipc.ErrorCode) bool {
	var e *ipc.Error
	return errors.As(err, &e) && e.Code == code
}

// A 1×1 PNG, the one image_input sent.
const png1x1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

// TestFromUISteer: steer is a user message with its own kind (the
// adapter writes it into the running turn), its own uuid and its own echo.
func TestFromUISteer(t *testing.T) {
	n := 0
	tr := ipc.New(ipc.Options{Echo: true, NewPromptID: func() string { n++; return "u" + strings.Repeat("0", n) }})
	cmd, err := tr.FromUI([]byte(`{"type":"steer","text":"mind the docs","extra":1}`))
	if err != nil || cmd.Kind != ipc.CmdSteer || cmd.Kind.String() != "steer" || cmd.PromptID != "u0" || cmd.Control() {
		t.Fatalf("steer: %+v %v", cmd, err)
	}
	if u := gjson.GetBytes(cmd.Stdin, "uuid").Str; u != "u0" || gjson.GetBytes(cmd.Stdin, "message.content.0.text").Str != "mind the docs" || gjson.GetBytes(cmd.Stdin, "type").Str != "user" {
		t.Errorf("steer's stdin: %s", cmd.Stdin)
	}
	if string(cmd.Echo) != `{"type":"steer","text":"mind the docs","ipc_version":2,"echo":true}` {
		t.Errorf("steer's echo: %s", cmd.Echo)
	}
	if got := string(ipc.Echo([]byte(`{"type":"steer","text":"x"}`))); got != `{"type":"steer","text":"x","ipc_version":2,"echo":true}` {
		t.Errorf("Echo of a steer: %s", got)
	}
	if got := string(ipc.AppendSteerTaken(nil)); got != `{"type":"steer_taken","ipc_version":2}` {
		t.Errorf("steer_taken: %s", got)
	}
}

func TestFromUIErrors(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	feed(t, tr, canUse)
	cases := []struct {
		line  string
		code  ipc.ErrorCode
		field string
	}{
		{`{"type":"user_message","text":`, ipc.CodeInvalidJSON, ""},
		{"{\"type\":\"user_message\",\"text\":\"\xff\"}", ipc.CodeInvalidJSON, ""},
		{`["user_message"]`, ipc.CodeInvalidJSON, ""},
		{`"hello"`, ipc.CodeInvalidJSON, ""},
		{`{"text":"hi"}`, ipc.CodeMissingField, "type"},
		{`{"type":42}`, ipc.CodeWrongType, "type"},
		{`{"type":"user_msg","text":"hi"}`, ipc.CodeUnknownType, "type"},
		{`{"type":"user_message"}`, ipc.CodeMissingField, "text"},
		{`{"type":"user_message","text":""}`, ipc.CodeInvalidValue, "text"},
		{`{"type":"user_message","text":7}`, ipc.CodeWrongType, "text"},
		{`{"type":"user_message","text":"hi","attachments":{}}`, ipc.CodeWrongType, "attachments"},
		{`{"type":"user_message","text":"hi","attachments":["x"]}`, ipc.CodeWrongType, "attachments.0"},
		{`{"type":"user_message","text":"hi","attachments":[{"content":"x"}]}`, ipc.CodeMissingField, "attachments.0.kind"},
		{`{"type":"user_message","text":"hi","attachments":[{"kind":"video","content":"x"}]}`, ipc.CodeInvalidValue, "attachments.0.kind"},
		{`{"type":"user_message","text":"hi","attachments":[{"kind":"text","name":"a.txt"}]}`, ipc.CodeMissingField, "attachments.0.content"},
		{`{"type":"user_message","text":"hi","attachments":[{"kind":"image","content":"` + png1x1 + `"}]}`, ipc.CodeMissingField, "attachments.0.media_type"},
		{`{"type":"steer"}`, ipc.CodeMissingField, "text"},
		{`{"type":"steer","text":""}`, ipc.CodeInvalidValue, "text"},
		{`{"type":"steer","text":"hi","attachments":[{"kind":"video","content":"x"}]}`, ipc.CodeInvalidValue, "attachments.0.kind"},
		{`{"type":"tool_approval","decision":"allow"}`, ipc.CodeMissingField, "request_id"},
		{`{"type":"tool_approval","request_id":"R1"}`, ipc.CodeMissingField, "decision"},
		{`{"type":"tool_approval","request_id":"R1","decision":"yes"}`, ipc.CodeInvalidValue, "decision"},
		{`{"type":"tool_approval","request_id":"R1","decision":"allow","updatedInput":"x"}`, ipc.CodeWrongType, "updatedInput"},
		{`{"type":"tool_approval","request_id":"R1","decision":"allow","updatedPermissions":{}}`, ipc.CodeWrongType, "updatedPermissions"},
		{`{"type":"tool_approval","request_id":"R1","decision":"deny","interrupt":"yes"}`, ipc.CodeWrongType, "interrupt"},
		{`{"type":"tool_approval","request_id":"R1","decision":"deny","message":1}`, ipc.CodeWrongType, "message"},
		{`{"type":"tool_approval","request_id":"nope","decision":"allow"}`, ipc.CodeUnknownRequest, "request_id"},
		{`{"type":"question_answer","request_id":"R1"}`, ipc.CodeMissingField, "answers"},
		{`{"type":"question_answer","request_id":"R1","answers":[]}`, ipc.CodeWrongType, "answers"},
		{`{"type":"question_answer","request_id":"R1","answers":{"q":"a"}}`, ipc.CodeInvalidValue, "request_id"},
		{`{"type":"interrupt","cancel_queued":1}`, ipc.CodeWrongType, "cancel_queued"},
		{`{"type":"permission_mode"}`, ipc.CodeMissingField, "mode"},
		{`{"type":"permission_mode","mode":null}`, ipc.CodeMissingField, "mode"},
		{`{"type":"model_change","model":""}`, ipc.CodeInvalidValue, "model"},
		{`{"type":"model_change","model":["x"]}`, ipc.CodeWrongType, "model"},
		{`{"type":"stop_task"}`, ipc.CodeMissingField, "task_id"},
		{`{"type":"session_command"}`, ipc.CodeMissingField, "command"},
		{`{"type":"session_command","command":"restart"}`, ipc.CodeInvalidValue, "command"},
		{`{"type":"session_command","command":"resume"}`, ipc.CodeMissingField, "session_id"},
		{`{"type":"session_command","command":"resume","session_id":5}`, ipc.CodeWrongType, "session_id"},
	}
	for _, c := range cases {
		cmd, err := tr.FromUI([]byte(c.line))
		var e *ipc.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: no *ipc.Error: %v", c.line, err)
			continue
		}
		if e.Code != c.code || e.Field != c.field {
			t.Errorf("%s: code %s field %q, want %s %q (%s)", c.line, e.Code, e.Field, c.code, c.field, e.Message)
		}
		if cmd.Stdin != nil || cmd.Kind != 0 {
			t.Errorf("%s: a command came with the error: %+v", c.line, cmd)
		}
		if !errors.Is(err, &ipc.Error{Code: c.code}) {
			t.Errorf("%s: errors.Is by code fails", c.line)
		}
		l := e.AppendIPC(nil)
		if !json.Valid(l) || gjson.GetBytes(l, "type").Str != "error" || gjson.GetBytes(l, "ipc_version").Int() != 2 ||
			gjson.GetBytes(l, "code").Str != string(c.code) || gjson.GetBytes(l, "message").Str == "" || !gjson.GetBytes(l, "recoverable").Bool() {
			t.Errorf("%s: error line %s", c.line, l)
		}
	}
	if p, ok := tr.Lookup("R1"); !ok || p.RequestID != "R1" {
		t.Error("a refused answer settled the request")
	}
	if !errors.Is(&ipc.Error{Code: ipc.CodeMissingField, Message: "x"}, ipc.ErrMissingField) || errors.Is(ipc.ErrMissingField, ipc.ErrWrongType) {
		t.Error("sentinels")
	}
}

func TestUserMessage(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	cmd, err := tr.FromUI([]byte(`{"type":"user_message","text":"hello there"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"hello there"}]},"parent_tool_use_id":null}`; string(cmd.Stdin) != want {
		t.Errorf("got  %s\nwant %s", cmd.Stdin, want)
	}
	if cmd.Kind != ipc.CmdUserMessage || cmd.Control() {
		t.Errorf("%+v", cmd)
	}
	cmd, err = tr.FromUI([]byte(`{"type":"user_message","text":"IMAGECHECK what is in this image?","attachments":[{"kind":"image","media_type":"image/png","content":"` + png1x1 + `"},{"kind":"text","name":"notes.md","content":"# Notes\n"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"user","session_id":"","message":{"role":"user","content":[{"type":"text","text":"IMAGECHECK what is in this image?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png1x1 + `"}},{"type":"text","text":"# Notes\n"}]},"parent_tool_use_id":null}`
	if string(cmd.Stdin) != want {
		t.Errorf("got  %s\nwant %s", cmd.Stdin, want)
	}
	// Attachments alone are enough; slash commands are ordinary text.
	if _, err := tr.FromUI([]byte(`{"type":"user_message","attachments":[{"kind":"text","content":"x"}]}`)); err != nil {
		t.Error(err)
	}
	if cmd, _ := tr.FromUI([]byte(`{"type":"user_message","text":"/cost"}`)); gjson.GetBytes(cmd.Stdin, "message.content.0.text").Str != "/cost" {
		t.Errorf("%s", cmd.Stdin)
	}
}

func TestAttachmentRefused(t *testing.T) {
	big := make([]byte, ipc.MaxImageBytes+1)
	copy(big, "\x89PNG\r\n\x1a\n")
	okBig := big[:ipc.MaxImageBytes]
	jpeg := base64.StdEncoding.EncodeToString([]byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'J', 'F', 'I', 'F'})
	pngHead := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
	cases := []struct {
		name, mt, data string
		refused        bool
	}{
		{"png", "image/png", png1x1, false},
		{"jpeg", "image/jpeg", jpeg, false},
		{"exactly 5 MB", "image/png", base64.StdEncoding.EncodeToString(okBig), false},
		{"png with line breaks", "image/png", png1x1[:40] + "\r\n" + png1x1[40:], false},
		{"bmp", "image/bmp", "Qk0=", true},
		{"svg", "image/svg+xml", "PHN2Zz4=", true},
		{"one byte over 5 MB", "image/png", base64.StdEncoding.EncodeToString(big), true},
		{"not base64", "image/png", "!!!not base64!!!", true},
		{"padded", "image/png", pngHead, false},
		{"raw (unpadded) base64", "image/png", strings.TrimRight(pngHead, "="), true},
		{"empty", "image/png", "", true},
		{"says png, is jpeg", "image/png", jpeg, true},
	}
	for _, c := range cases {
		tr := ipc.New(ipc.Options{})
		line := `{"type":"user_message","text":"look","attachments":[{"kind":"text","content":"t"},{"kind":"image","media_type":"` + c.mt + `","content":"` + strings.ReplaceAll(c.data, "\r\n", `\r\n`) + `"}]}`
		cmd, err := tr.FromUI([]byte(line))
		if !c.refused {
			if err != nil || cmd.Stdin == nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		var e *ipc.Error
		if !errors.As(err, &e) {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if e.Code != ipc.CodeAttachmentRefused || e.Field != "attachments.1" || cmd.Stdin != nil {
			t.Errorf("%s: %+v, stdin %q", c.name, e, cmd.Stdin)
		}
	}
}

func TestToolApproval(t *testing.T) {
	t.Run("allow sends behavior, the original input and toolUseID", func(t *testing.T) {
		tr := ipc.New(ipc.Options{})
		feed(t, tr, canUse)
		cmd, err := tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"allow"}`))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"type":"control_response","response":{"subtype":"success","request_id":"R1","response":{"behavior":"allow","updatedInput":{"command":"touch x"},"toolUseID":"toolu_1"}}}`
		if string(cmd.Stdin) != want {
			t.Errorf("got  %s\nwant %s", cmd.Stdin, want)
		}
		if strings.Contains(string(cmd.Stdin), "decision") {
			t.Error(`"decision" sent to the CLI`)
		}
		if cmd.Kind != ipc.CmdToolApproval || cmd.RequestID != "R1" || !cmd.Control() || cmd.EndsTurn {
			t.Errorf("%+v", cmd)
		}
		_, err = tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"allow"}`))
		var e *ipc.Error
		if !errors.As(err, &e) || e.Code != ipc.CodeUnknownRequest || e.RequestID != "R1" || !strings.Contains(e.Message, "already answered") {
			t.Errorf("second answer: %v", err)
		}
	})
	t.Run("allow with changes", func(t *testing.T) {
		tr := ipc.New(ipc.Options{})
		feed(t, tr, canUse)
		cmd, err := tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"allow","updatedInput":{"command":"touch y"},"updatedPermissions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		r := gjson.GetBytes(cmd.Stdin, "response.response")
		if r.Get("behavior").Str != "allow" || r.Get("updatedInput").Raw != `{"command":"touch y"}` || r.Get("updatedPermissions.0.mode").Str != "acceptEdits" {
			t.Errorf("%s", cmd.Stdin)
		}
	})
	t.Run("deny with interrupt", func(t *testing.T) {
		tr := ipc.New(ipc.Options{})
		feed(t, tr, canUse)
		cmd, err := tr.FromUI([]byte(`{"type":"tool_approval","request_id":"R1","decision":"deny","message":"User rejected and stopped","interrupt":true}`))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"type":"control_response","response":{"subtype":"success","request_id":"R1","response":{"behavior":"deny","message":"User rejected and stopped","interrupt":true,"toolUseID":"toolu_1"}}}`
		if string(cmd.Stdin) != want || !cmd.EndsTurn {
			t.Errorf("got  %s\nwant %s", cmd.Stdin, want)
		}
	})
}

const askLine = `{"type":"control_request","request_id":"Q1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","display_name":"AskUserQuestion","input":{"questions":[{"question":"Which color do you prefer?","header":"Color","options":[{"label":"Red","description":"Warm"},{"label":"Blue","description":"Cool"}],"multiSelect":false},{"question":"Which sizes?","header":"Size","options":[{"label":"S"},{"label":"M"},{"label":"L"}],"multiSelect":true}]},"tool_use_id":"toolu_0165_0","requires_user_interaction":true}}`

func TestQuestionAnswer(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	feed(t, tr, askLine)
	cmd, err := tr.FromUI([]byte(`{"type":"question_answer","request_id":"Q1","answers":{"Which color do you prefer?":"Blue","Which sizes?":["S","L"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := gjson.GetBytes(cmd.Stdin, "response.response")
	if r.Get("behavior").Str != "allow" || r.Get("toolUseID").Str != "toolu_0165_0" {
		t.Errorf("%s", cmd.Stdin)
	}
	in := r.Get("updatedInput")
	if in.Get("answers").Raw != `{"Which color do you prefer?":"Blue","Which sizes?":"S,L"}` {
		t.Errorf("answers: %s", in.Get("answers").Raw)
	}
	orig := gjson.Get(askLine, "request.input.questions").Raw
	if in.Get("questions").Raw != orig {
		t.Errorf("questions changed:\n%s\n%s", in.Get("questions").Raw, orig)
	}
	if cmd.Kind != ipc.CmdQuestionAnswer || cmd.RequestID != "Q1" {
		t.Errorf("%+v", cmd)
	}
	if _, ok := tr.Lookup("Q1"); ok {
		t.Error("not settled")
	}

	bad := []struct {
		answers string
		code    ipc.ErrorCode
	}{
		{`{"What?":"x"}`, ipc.CodeInvalidValue},
		{`{"Which sizes?":[1]}`, ipc.CodeWrongType},
		{`{"Which sizes?":[]}`, ipc.CodeInvalidValue},
		{`{"Which sizes?":{"a":1}}`, ipc.CodeWrongType},
		{`{}`, ipc.CodeInvalidValue},
	}
	for _, b := range bad {
		tr := ipc.New(ipc.Options{})
		feed(t, tr, askLine)
		if _, err := tr.FromUI([]byte(`{"type":"question_answer","request_id":"Q1","answers":` + b.answers + `}`)); !isCode(err, b.code) {
			t.Errorf("%s: %v, want %s", b.answers, err, b.code)
		}
		if _, ok := tr.Lookup("Q1"); !ok {
			t.Errorf("%s: refused answer settled the request", b.answers)
		}
	}
}

func TestControlCommands(t *testing.T) {
	tr := ipc.New(ipc.Options{RequestIDPrefix: "ui-"})
	cases := []struct {
		line, want string
		kind       ipc.CommandKind
		subtype    string
	}{
		{`{"type":"interrupt"}`, `{"type":"control_request","request_id":"ui-1","request":{"subtype":"interrupt"}}`, ipc.CmdInterrupt, "interrupt"},
		{`{"type":"interrupt","cancel_queued":true}`, `{"type":"control_request","request_id":"ui-2","request":{"subtype":"interrupt","cancel_queued":true}}`, ipc.CmdInterrupt, "interrupt"},
		{`{"type":"permission_mode","mode":"acceptEdits"}`, `{"type":"control_request","request_id":"ui-3","request":{"subtype":"set_permission_mode","mode":"acceptEdits"}}`, ipc.CmdPermissionMode, "set_permission_mode"},
		{`{"type":"model_change","model":"claude-sonnet-4-5"}`, `{"type":"control_request","request_id":"ui-4","request":{"subtype":"set_model","model":"claude-sonnet-4-5"}}`, ipc.CmdModelChange, "set_model"},
		{`{"type":"stop_task","task_id":"a49982d68e6b03f92"}`, `{"type":"control_request","request_id":"ui-5","request":{"subtype":"stop_task","task_id":"a49982d68e6b03f92"}}`, ipc.CmdStopTask, "stop_task"},
	}
	for _, c := range cases {
		cmd, err := tr.FromUI([]byte(c.line))
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		if string(cmd.Stdin) != c.want || cmd.Kind != c.kind || !cmd.Control() {
			t.Errorf("%s:\n got %s\nwant %s", c.line, cmd.Stdin, c.want)
		}
		if sub, ok := tr.Outstanding(cmd.RequestID); !ok || sub != c.subtype {
			t.Errorf("%s: not tracked", c.line)
		}
		if cmd.Kind.String() != gjson.Get(c.line, "type").Str {
			t.Errorf("Kind.String() = %s", cmd.Kind)
		}
	}
}

func TestSessionCommand(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	cases := []struct {
		line string
		want ipc.Respawn
	}{
		{`{"type":"session_command","command":"new"}`, ipc.Respawn{Mode: ipc.RespawnNew}},
		{`{"type":"session_command","command":"continue"}`, ipc.Respawn{Mode: ipc.RespawnContinue}},
		{`{"type":"session_command","command":"resume","session_id":"0d23e1f2-5a0c-4a6e-9d4e-2f2f7f6e8a11"}`, ipc.Respawn{Mode: ipc.RespawnResume, SessionID: "0d23e1f2-5a0c-4a6e-9d4e-2f2f7f6e8a11"}},
		{`{"type":"session_command","command":"fork"}`, ipc.Respawn{Mode: ipc.RespawnFork}},
	}
	for _, c := range cases {
		cmd, err := tr.FromUI([]byte(c.line))
		if err != nil || cmd.Kind != ipc.CmdSessionCommand || cmd.Respawn != c.want || cmd.Stdin != nil || cmd.Control() {
			t.Errorf("%s: %+v %v", c.line, cmd, err)
		}
	}
	feed(t, tr, initLine)
	for cmdName, mode := range map[string]ipc.RespawnMode{"resume": ipc.RespawnResume, "fork": ipc.RespawnFork} {
		cmd, err := tr.FromUI([]byte(`{"type":"session_command","command":"` + cmdName + `"}`))
		if err != nil || cmd.Respawn != (ipc.Respawn{Mode: mode, SessionID: "s1"}) {
			t.Errorf("%s defaults to the current session: %+v %v", cmdName, cmd.Respawn, err)
		}
	}
}

// TestSessionCommandBadID: a session id that is not a UUID (the only form
// the CLI gives) is refused before anything looks for its file.
func TestSessionCommandBadID(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	for _, id := range []string{"0d23", `x\u0001`, "../../x", "0d23e1f2-5a0c-4a6e-9d4e-2f2f7f6e8a11 "} {
		for _, c := range []string{"resume", "fork"} {
			_, err := tr.FromUI([]byte(`{"type":"session_command","command":"` + c + `","session_id":"` + id + `"}`))
			var e *ipc.Error
			if !errors.As(err, &e) || e.Code != ipc.CodeInvalidValue || e.Field != "session_id" {
				t.Errorf("%s %q: %v, want invalid_value on session_id", c, id, err)
			}
		}
	}
}

// TestModelChangeBadName: a model name with a control character, a space
// or over 256 bytes never reaches the CLI, which would take it and fail
// every later prompt.
func TestModelChangeBadName(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	for _, m := range []string{`claude-\u0001x`, "claude x", `tab\there`, strings.Repeat("a", 257)} {
		cmd, err := tr.FromUI([]byte(`{"type":"model_change","model":"` + m + `"}`))
		var e *ipc.Error
		if !errors.As(err, &e) || e.Code != ipc.CodeInvalidValue || e.Field != "model" || cmd.Stdin != nil {
			t.Errorf("%q: %+v %v, want invalid_value on model", m, cmd, err)
		}
	}
	if _, err := tr.FromUI([]byte(`{"type":"model_change","model":"claude-sonnet-4-5"}`)); err != nil {
		t.Errorf("a model id refused: %v", err)
	}
}

func TestResetProcess(t *testing.T) {
	tr := ipc.New(ipc.Options{})
	cmd, _ := tr.FromUI([]byte(`{"type":"interrupt"}`))
	feed(t, tr, initLine, canUse)
	tr.CancelPending("respawn", nil)
	tr.ResetProcess()
	if _, ok := tr.Outstanding(cmd.RequestID); ok {
		t.Error("outstanding request survived")
	}
	if got := feed(t, tr, initLine); len(got) != 0 {
		t.Errorf("resumed session repeated its announcements: %v", got)
	}
}
