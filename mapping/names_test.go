package mapping

import (
	"strconv"
	"strings"
	"testing"
)

func TestValidModelName(t *testing.T) {
	for _, s := range []string{"default", "sonnet", "opus[1m]", "claude-sonnet-4-5", "claude-opus-4-1-20250805",
		"claude-3-5-sonnet-v2@20241022", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-v1:0",
		"opusplan", "claude_x.y", strings.Repeat("a", MaxModelName)} {
		if !ValidModelName(s) {
			t.Errorf("ValidModelName(%q) = false", s)
		}
	}
	for _, s := range []string{"", "claude-\x01x", "claude x", "claude-\u00e9", "a\nb", "tab\there", `quote"`, strings.Repeat("a", MaxModelName+1)} {
		if ValidModelName(s) {
			t.Errorf("ValidModelName(%q) = true", s)
		}
	}
	if !strings.HasPrefix(ModelNameRule, "1 to "+strconv.Itoa(MaxModelName)+" ") {
		t.Errorf("ModelNameRule %q does not say MaxModelName (%d)", ModelNameRule, MaxModelName)
	}
}

func TestValidSessionID(t *testing.T) {
	for _, s := range []string{"5c3bb572-859f-4ecf-9616-2b9d21f1b011", "5C3BB572-859F-4ECF-9616-2B9D21F1B011"} {
		if !ValidSessionID(s) {
			t.Errorf("ValidSessionID(%q) = false", s)
		}
	}
	for _, s := range []string{"", "s", "../../etc/passwd", "../../../etc/passwd-aaaaaaaaaaaaaaaa", "5c3bb572859f-4ecf-9616-2b9d21f1b011x", "5c3bb572-859f-4ecf-9616-2b9d21f1b01\x01", "5c3bb572x859f-4ecf-9616-2b9d21f1b011", "5c3bb572-859f-4ecf-9616-2b9d21f1b011 "} {
		if ValidSessionID(s) {
			t.Errorf("ValidSessionID(%q) = true", s)
		}
	}
}
