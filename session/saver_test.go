package session

import (
	"strings"
	"testing"
)

func TestHeadTail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		n      int
		writes []string
		want   string
	}{
		{"empty", 4, nil, ""},
		{"fits head", 4, []string{"ab"}, "ab"},
		{"fits head and tail", 4, []string{"abc", "defgh"}, "abcdefgh"},
		{"one byte over", 4, []string{"abcdefghi"}, "abcd\n… omitting 1 bytes …\nfghi"},
		{"big single write", 3, []string{"0123456789"}, "012\n… omitting 4 bytes …\n789"},
		{"ring wraps", 3, []string{"012", "345", "6", "78", "9"}, "012\n… omitting 4 bytes …\n789"},
		{"ring wraps many times", 2, []string{"ab", "cd", "e", "f", "g", "h", "i"}, "ab\n… omitting 5 bytes …\nhi"},
		{"big write into partial tail", 3, []string{"012", "3", "456789"}, "012\n… omitting 4 bytes …\n789"},
		{"keep nothing", 0, []string{"abc"}, "\n… omitting 3 bytes …\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := headTail{n: tc.n}
			total := 0
			for _, w := range tc.writes {
				n, err := h.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
				total += n
			}
			if got := h.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if kept := min(total, 2*tc.n); h.skipped != int64(total-kept) {
				t.Errorf("skipped = %d, want %d", h.skipped, total-kept)
			}
		})
	}
}

// Byte-at-a-time writes agree with one big write.
func TestHeadTailWriteSizes(t *testing.T) {
	t.Parallel()
	data := strings.Repeat("the quick brown fox ", 50)
	one := headTail{n: 37}
	one.Write([]byte(data))
	for _, step := range []int{1, 3, 36, 37, 38, 100} {
		h := headTail{n: 37}
		for i := 0; i < len(data); i += step {
			h.Write([]byte(data[i:min(i+step, len(data))]))
		}
		if h.String() != one.String() {
			t.Errorf("step %d: %q, want %q", step, h.String(), one.String())
		}
	}
}
