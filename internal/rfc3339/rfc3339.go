// Package rfc3339 checks the layout of an RFC 3339 date-time more strictly
// than time.Parse does. Pure, safe for concurrent use.
package rfc3339

// Match reports whether s is laid out as RFC 3339's date-time:
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM), upper-case T and Z. (time.Parse
// alone also takes a one-digit hour or a comma before the fraction.) It
// checks the layout only; time.Parse checks the values (a month of 13, a
// 30th of February).
func Match(s string) bool {
	const head = "dddd-dd-ddTdd:dd:dd"
	if len(s) < len(head)+1 {
		return false
	}
	for i := range len(head) {
		if head[i] == 'd' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != head[i] {
			return false
		}
	}
	i := len(head)
	if s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			return false
		}
		i = j
	}
	switch rest := s[i:]; {
	case rest == "Z":
		return true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		return isDigit(rest[1]) && isDigit(rest[2]) && isDigit(rest[4]) && isDigit(rest[5])
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
