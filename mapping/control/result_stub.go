// Package control is the control plane's pure part (issue #9). This file
// is a stub for the branch ctl-targets only: the lane's helper writes the
// package; drop this file at the merge.
package control

// Result is a control ack's result code.
type Result string

const (
	OK            Result = "ok"
	NotLive              = "not_live"
	NotFound             = "not_found"
	Busy                 = "busy"
	Timeout              = "timeout"
	Rejected             = "rejected"
	InternalError        = "internal_error"
)
