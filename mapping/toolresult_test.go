package mapping_test

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping"
)

func TestToolResultText(t *testing.T) {
	cases := []struct{ content, want string }{
		{`"plain output"`, "plain output"},
		{`" <tool_use_error>Error: no such tool</tool_use_error>\n"`, "Error: no such tool"},
		{`"see <tool_use_error> in docs"`, "see <tool_use_error> in docs"},
		{`[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}]`, "ab"},
		{`[{"type":"text","text":"<tool_use_error>"},{"type":"text","text":"x</tool_use_error>"}]`, "x"},
		{`{"type":"text","text":"not a list"}`, ""},
		{`null`, ""},
	}
	for _, c := range cases {
		if got := mapping.ToolResultText(gjson.Parse(c.content)); got != c.want {
			t.Errorf("ToolResultText(%s) = %q, want %q", c.content, got, c.want)
		}
	}
}
