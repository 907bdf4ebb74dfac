package mapping

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jscan"
)

// ToolResultText is a tool_result block's content as text: the string, or
// the text of its text blocks joined, without the <tool_use_error> wrapping
// (see StripToolUseError); "" for content of any other type.
func ToolResultText(content gjson.Result) string {
	switch {
	case content.Type == gjson.String:
		return StripToolUseError(content.Str)
	case content.IsArray():
		var sb strings.Builder
		jscan.Elements(content.Raw, func(c gjson.Result) bool {
			if jscan.Get(c.Raw, "type").Str == "text" {
				sb.WriteString(jscan.Get(c.Raw, "text").Str)
			}
			return true
		})
		return StripToolUseError(sb.String())
	}
	return ""
}

// StripToolUseError removes the <tool_use_error>…</tool_use_error> wrapping
// the CLI puts around a failed tool's output. Other text is returned as is.
func StripToolUseError(s string) string {
	const open, close = "<tool_use_error>", "</tool_use_error>"
	trimmed := strings.TrimSpace(s)
	if strings.HasPrefix(trimmed, open) && strings.HasSuffix(trimmed, close) && len(trimmed) >= len(open)+len(close) {
		return trimmed[len(open) : len(trimmed)-len(close)]
	}
	return s
}
