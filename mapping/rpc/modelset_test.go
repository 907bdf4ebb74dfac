package rpc

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestParseModelSetBadName: a name the CLI would take and then fail every
// prompt with (control characters, spaces, over 256 bytes) is -32602.
func TestParseModelSetBadName(t *testing.T) {
	for _, n := range []string{`claude-\u0001x`, "claude x", `a\nb`, strings.Repeat("a", 257)} {
		_, err := ParseModelSet(gjson.Parse(`{"name":"` + n + `"}`))
		if err == nil || err.Code != CodeInvalidParams {
			t.Errorf("%q: %v, want -32602", n, err)
		}
	}
	for _, n := range []string{"default", "sonnet", "claude-sonnet-4-5", "opus[1m]"} {
		if _, err := ParseModelSet(gjson.Parse(`{"name":"` + n + `"}`)); err != nil {
			t.Errorf("%q refused: %v", n, err)
		}
	}
}
