package lane000

import (
	"reflect"
	"testing"
)

func TestAppendApproval(t *testing.T) {
	w := Worker{Team: "t", AgentID: "a", SessionID: "s"}
	a := Approval{ID: "approval-1", Status: ApprovalOpen, Kind: "command", Question: "Run \"it\"?",
		Text: []string{"$ echo \"hi\"\t\x1b"}, Command: "echo \"hi\"",
		Choices: []ApprovalChoice{{N: 1, Label: "Yes", Key: "y"}, {N: 2, Label: "No", Key: "esc"}}}
	keys, m := fieldsOf(t, w.AppendApproval([]byte(nil), &a, acked))
	want := []string{"type", "v", "at", "team", "agent_id", "session_id", "approval_id", "status", "kind", "question", "command", "text", "choices"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if m["type"] != TypeWorkerApproval || m["question"] != `Run "it"?` || m["text"].([]any)[0] != "$ echo \"hi\"\t\x1b" ||
		m["choices"].([]any)[1].(map[string]any)["key"] != "esc" {
		t.Fatalf("%v", m)
	}
	// Closed: chosen, null when the prompt left the screen otherwise; no
	// file or command when the prompt names none.
	a.Status, a.Command, a.Text = ApprovalClosed, "", nil
	keys, m = fieldsOf(t, w.AppendApproval(nil, &a, acked))
	if v, ok := m["chosen"]; !ok || v != nil || keys[len(keys)-1] != "chosen" || m["command"] != nil || len(m["text"].([]any)) != 0 {
		t.Fatalf("closed, nothing chosen: %v", m)
	}
	a.Chosen = &a.Choices[0]
	_, m = fieldsOf(t, w.AppendApproval(nil, &a, acked))
	if c := m["chosen"].(map[string]any); c["n"] != 1.0 || c["label"] != "Yes" || c["key"] != "y" {
		t.Fatalf("chosen %v", c)
	}
}
