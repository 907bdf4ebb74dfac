package session

import (
	"strconv"
)

// headTail keeps the first n and the last n bytes written to it, and counts
// what was dropped in between (the idea of os/exec's prefixSuffixSaver). It is
// not safe for concurrent use; Child guards it with a mutex.
type headTail struct {
	n       int
	head    []byte
	tail    []byte // ring buffer once len(tail) == n
	tailOff int    // start of the oldest byte in tail when it is full
	skipped int64
}

func (h *headTail) Write(p []byte) (int, error) {
	total := len(p)
	p = h.fill(&h.head, p)

	// Only the last n bytes of p can survive in the tail.
	if over := len(p) - h.n; over > 0 {
		p = p[over:]
		h.skipped += int64(over)
	}
	p = h.fill(&h.tail, p)

	// The tail is full: overwrite the oldest bytes in place.
	for len(p) > 0 {
		c := copy(h.tail[h.tailOff:], p)
		p = p[c:]
		h.skipped += int64(c)
		h.tailOff += c
		if h.tailOff == h.n {
			h.tailOff = 0
		}
	}
	return total, nil
}

// fill appends as much of p to *dst as fits under h.n and returns the rest.
func (h *headTail) fill(dst *[]byte, p []byte) []byte {
	room := h.n - len(*dst)
	if room <= 0 || len(p) == 0 {
		return p
	}
	if room > len(p) {
		room = len(p)
	}
	*dst = append(*dst, p[:room]...)
	return p[room:]
}

// String returns the head, then a marker naming the number of bytes dropped
// if any were, then the tail.
func (h *headTail) String() string {
	if h.skipped == 0 {
		b := make([]byte, 0, len(h.head)+len(h.tail))
		b = append(b, h.head...)
		return string(append(b, h.tail...))
	}
	marker := "\n… omitting " + strconv.FormatInt(h.skipped, 10) + " bytes …\n"
	b := make([]byte, 0, len(h.head)+len(marker)+len(h.tail))
	b = append(b, h.head...)
	b = append(b, marker...)
	b = append(b, h.tail[h.tailOff:]...)
	b = append(b, h.tail[:h.tailOff]...)
	return string(b)
}
