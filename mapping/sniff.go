package mapping

import "bytes"

// Sniffer reads the top-level "type" and "session_id" string values of a
// JSON object that arrives in pieces, without holding the object. Drop-in
// mode uses it for lines too large to keep whole: key order in CLI frames is
// not stable, so a prefix match would be wrong, and a full parse would need
// the whole line.
//
// It tracks only nesting depth and string state, so it costs a few
// instructions a byte and never allocates after its first use. Values longer
// than maxSniffValue are cut; a type or id is far shorter.
type Sniffer struct {
	depth   int
	inStr   bool
	esc     bool
	wantKey bool
	role    byte // 'k' for a top-level key, 'v' for a top-level string value, 0 otherwise
	buf     []byte
	key     []byte

	// Type and SessionID are the values read so far; they are the
	// Sniffer's until the next Reset.
	Type      []byte
	SessionID []byte
}

const maxSniffValue = 256

// Reset makes the Sniffer ready for a new object.
func (s *Sniffer) Reset() {
	s.depth, s.inStr, s.esc, s.wantKey, s.role = 0, false, false, false, 0
	s.buf, s.key = s.buf[:0], s.key[:0]
	s.Type, s.SessionID = s.Type[:0], s.SessionID[:0]
}

// Feed feeds the next piece of the line.
func (s *Sniffer) Feed(p []byte) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if s.inStr {
			if !s.esc {
				// Skip to the next '"' or '\\' in one go: most of a large
				// line is string content.
				j := bytes.IndexByte(p[i:], '"')
				if j < 0 {
					j = len(p) - i
				}
				if k := bytes.IndexByte(p[i:i+j], '\\'); k >= 0 {
					j = k
				}
				if j > 0 {
					if s.role != 0 && len(s.buf) < maxSniffValue {
						s.buf = append(s.buf, p[i:i+min(j, maxSniffValue-len(s.buf))]...)
					}
					i += j - 1
					continue
				}
			}
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				s.endString()
				continue
			}
			if s.role != 0 && len(s.buf) < maxSniffValue {
				s.buf = append(s.buf, c)
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			s.buf = s.buf[:0]
			s.role = 0
			if s.depth == 1 {
				if s.wantKey {
					s.role = 'k'
				} else {
					s.role = 'v'
				}
			}
		case '{', '[':
			s.depth++
			if s.depth == 1 {
				s.wantKey = c == '{'
			}
		case '}', ']':
			s.depth--
		case ':':
			if s.depth == 1 {
				s.wantKey = false
			}
		case ',':
			if s.depth == 1 {
				s.wantKey = true
				s.key = s.key[:0]
			}
		}
	}
}

func (s *Sniffer) endString() {
	switch s.role {
	case 'k':
		s.key = append(s.key[:0], s.buf...)
	case 'v':
		switch string(s.key) {
		case "type":
			s.Type = append(s.Type[:0], s.buf...)
		case "session_id":
			s.SessionID = append(s.SessionID[:0], s.buf...)
		}
	}
	s.role = 0
}
