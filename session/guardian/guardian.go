// Package guardian is the guardian process of session.Guard: ccbridge's
// own executable re-run with [Arg] as its first argument, which starts
// the CLI and makes sure nothing the CLI starts outlives it or ccbridge
// (session.Guard says how).
//
// A program that imports this package (ccbridge does, through session)
// becomes the guardian in this package's init function when its first
// argument is [Arg], and never returns from it. That is before the
// packages that import this one are initialized, and before most others:
// its imports are few, and Go initializes a package as soon as its
// imports are. So the guardian, a process of its own beside every CLI,
// never runs the initialization of the HTTP server, the terminal emulator
// and the rest of what ccbridge links, nor touches their memory.
package guardian

import "os"

// Arg, as the first argument of ccbridge's own executable, makes that
// process a guardian instead of a bridge. No CLI argument looks like it.
const Arg = "__ccbridge_guardian__"

// The guardian's inherited descriptors (session.Guarded's ExtraFiles).
const (
	LifelineFD = 3 // read end of the lifeline: end of file means sweep
	ReportFD   = 4 // write end of the start report
)

// OK is the report of a guardian that started its command; otherwise it
// reports "ERRNO message" and exits.
const OK = "ok"

func init() {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Run(os.Args[2:]))
	}
}
