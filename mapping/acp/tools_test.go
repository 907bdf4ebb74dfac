package acp

import (
	"testing"

	"github.com/tidwall/gjson"
)

func TestApplyPatch(t *testing.T) {
	cases := []struct {
		name, orig, hunks, want string
		ok                      bool
	}{
		{"replace", "a\nb\nc\n", `[{"oldStart":1,"oldLines":3,"lines":[" a","-b","+B"," c"]}]`, "a\nB\nc\n", true},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", `[{"oldStart":1,"oldLines":2,"lines":["-1","+one"," 2"]},{"oldStart":8,"oldLines":2,"lines":[" 8","-9","+nine"]}]`, "one\n2\n3\n4\n5\n6\n7\n8\nnine\n", true},
		{"insert after line 1", "a\nc\n", `[{"oldStart":1,"oldLines":0,"lines":["+b"]}]`, "a\nb\nc\n", true},
		{"no newline at end", "a\nb", `[{"oldStart":1,"oldLines":2,"lines":[" a","-b","\\ No newline at end of file","+c","\\ No newline at end of file"]}]`, "a\nc", true},
		{"mismatch", "a\nb\n", `[{"oldStart":1,"oldLines":2,"lines":[" a","-x"]}]`, "", false},
		{"out of range", "a\n", `[{"oldStart":9,"oldLines":1,"lines":["-a"]}]`, "", false},
		{"overlap", "a\nb\n", `[{"oldStart":2,"oldLines":1,"lines":["-b"]},{"oldStart":1,"oldLines":1,"lines":["-a"]}]`, "", false},
		{"empty", "a\n", `[]`, "", false},
		{"bad line", "a\n", `[{"oldStart":1,"oldLines":1,"lines":["?a"]}]`, "", false},
	}
	for _, c := range cases {
		got, ok := applyPatch(c.orig, gjson.Parse(c.hunks))
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %q %v, want %q %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestEditDiffFallbacks(t *testing.T) {
	// The patch does not apply: Edit's own replacement on originalFile.
	d, ok := editDiff(gjson.Parse(`{"filePath":"/f","originalFile":"x a y a","oldString":"a","newString":"b","replaceAll":true,"structuredPatch":[]}`))
	if !ok || d.newText != "x b y b" || d.oldText != "x a y a" {
		t.Errorf("replace all: %+v", d)
	}
	// No original file: the two strings.
	d, ok = editDiff(gjson.Parse(`{"filePath":"/f","oldString":"a","newString":"b"}`))
	if !ok || d.oldText != "a" || d.newText != "b" {
		t.Errorf("snippets: %+v", d)
	}
	if _, ok := editDiff(gjson.Parse(`{"oldString":"a"}`)); ok {
		t.Errorf("a diff without a path")
	}
}

func TestToolKindAndTitle(t *testing.T) {
	cases := []struct{ name, input, kind, title string }{
		{"Read", `{"file_path":"/a","offset":10}`, "read", "Read /a (from line 10)"},
		{"Read", `{}`, "read", "Read"},
		{"Write", `{"file_path":"/a"}`, "edit", "Write /a"},
		{"Bash", `{"command":"ls -l\nrm x","description":"List"}`, "execute", "ls -l"},
		{"Bash", `{"description":"List"}`, "execute", "List"},
		{"Glob", `{"pattern":"*.go"}`, "search", "Find *.go"},
		{"Grep", `{"pattern":"x","path":"/p"}`, "search", "Search for x in /p"},
		{"WebFetch", `{"url":"https://a"}`, "fetch", "Fetch https://a"},
		{"WebSearch", `{"query":"go"}`, "fetch", "Search the web: go"},
		{"Agent", `{"description":"Explore"}`, "think", "Explore"},
		{"Task", `{}`, "think", "Task"},
		{"TodoWrite", `{}`, "think", "Update the plan"},
		{"ExitPlanMode", `{}`, "switch_mode", "Ready to code?"},
		{"AskUserQuestion", `{"questions":[{"question":"Q?"}]}`, "other", "Q?"},
		{"mcp__srv__do_it", `{}`, "other", "do_it (MCP: srv)"},
		{"Skill", `{"skill":"pdf"}`, "other", "Skill: pdf"},
		{"Mystery", `{}`, "other", "Mystery"},
	}
	for _, c := range cases {
		in := gjson.Parse(c.input)
		if k := ToolKind(c.name); k != c.kind {
			t.Errorf("%s: kind %q, want %q", c.name, k, c.kind)
		}
		if got := ToolTitle(c.name, in); got != c.title {
			t.Errorf("%s %s: title %q, want %q", c.name, c.input, got, c.title)
		}
	}
}
