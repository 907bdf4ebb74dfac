package mapping

// MaxModelName is the longest model name ValidModelName accepts.
const MaxModelName = 256

// ModelNameRule is ValidModelName's rule in words, for the errors that
// refuse a name ("model must be " + ModelNameRule).
const ModelNameRule = "1 to 256 letters, digits or -._:/@[] (a model alias, id or ARN)"

// ValidModelName reports whether s can be a model name or id: 1 to
// MaxModelName bytes of ASCII letters, digits and "-._:/@[]", which covers
// the CLI's aliases ("sonnet", "opus[1m]", "default"), model ids
// ("claude-sonnet-4-5-20250929"), Vertex ids ("claude-…@20250929") and
// Bedrock ARNs ("arn:aws:bedrock:…/us.anthropic.claude-…"). The CLI accepts
// any string and every later prompt fails on a bad one, so the dialects
// check names before they reach it: every place a UI names a model (ipc
// model_change, rpc model.set, serve's POST /api/web/sessions) uses this
// one rule.
func ValidModelName(s string) bool {
	if s == "" || len(s) > MaxModelName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '.', c == '_', c == ':', c == '/', c == '@', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}

// ValidSessionID reports whether s has the CLI's session id form, a UUID
// in 8-4-4-4-12 hex (the CLI refuses --session-id in any other form, and
// names its session files by it).
func ValidSessionID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
