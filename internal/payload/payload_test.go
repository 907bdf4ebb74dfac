package payload

import (
	"strings"
	"testing"
)

func TestPreview(t *testing.T) {
	long := strings.Repeat("x", 79) + "é" + strings.Repeat("y", 200) // é cut in two at byte 80
	for in, want := range map[string]string{
		"short":     "short",
		"bad \xff":  "bad ?",
		long:        strings.Repeat("x", 79) + "?",
		long[:80+1]: strings.Repeat("x", 79) + "?",
		long[:79]:   strings.Repeat("x", 79),
		"":          "",
	} {
		if got := Preview(in); got != want {
			t.Errorf("Preview(%q) = %q, want %q", in, got, want)
		}
		if got := Preview([]byte(in)); got != want {
			t.Errorf("Preview([]byte(%q)) = %q, want %q", in, got, want)
		}
	}
}
