package adapter

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
		if got := preview(in); got != want {
			t.Errorf("preview(%q) = %q, want %q", in, got, want)
		}
		if got := preview([]byte(in)); got != want {
			t.Errorf("preview([]byte(%q)) = %q, want %q", in, got, want)
		}
	}
}
