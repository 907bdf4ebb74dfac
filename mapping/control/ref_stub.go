package control

import "time"

// ContentRef is a stand-in copied from the contract in
// notes/control-api.md until the real package lands; drop this file when
// merging.
type ContentRef struct {
	Path, SHA256, MIME string
	Size               int64
	ExpiresAt          time.Time // zero: none
}
