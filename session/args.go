package session

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// ErrInvalidArgs is matched (errors.Is) by every [*ArgError].
var ErrInvalidArgs = errors.New("invalid CLI options")

// ArgError reports an [Options] value that the CLI would reject, or that it
// would accept with a surprising meaning. errors.Is(err, ErrInvalidArgs)
// holds for it.
type ArgError struct {
	Flag string // the CLI flag at fault, e.g. "--session-id"
	Msg  string // what is wrong
}

func (e *ArgError) Error() string { return "session: " + ErrInvalidArgs.Error() + ": " + e.Msg }

// Is makes errors.Is(err, ErrInvalidArgs) true.
func (e *ArgError) Is(target error) bool { return target == ErrInvalidArgs }

// permissionModes lists the values the CLI accepts for --permission-mode.
var permissionModes = []string{"default", "acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan"}

// Options are the session-level CLI flags that ccbridge sets itself. The
// zero value adds no flags.
type Options struct {
	Model          string // --model; "" leaves the CLI's default
	PermissionMode string // --permission-mode; "" or a mode the CLI knows (see Validate)
	Resume         string // --resume: the session id to resume
	Continue       bool   // --continue: resume the most recent session in the cwd
	ForkSession    bool   // --fork-session: resume into a new session id; needs Resume or Continue
	SessionID      string // --session-id: a UUID; with Resume/Continue it needs ForkSession
	// Extra is appended verbatim after every other flag. It is not checked
	// against the fields above.
	Extra []string
}

// ResumeFrom returns a copy of o that resumes sessionID: Resume is set, and
// Continue, ForkSession and SessionID are cleared. It is what a respawn after
// a crash uses; Model, PermissionMode and Extra are kept.
func (o Options) ResumeFrom(sessionID string) Options {
	o.Resume = sessionID
	o.Continue = false
	o.ForkSession = false
	o.SessionID = ""
	o.Extra = slices.Clone(o.Extra)
	return o
}

// Validate checks o against the rules the CLI enforces (protocol README
// §a.1), plus two it does not enforce but that would silently do something
// other than what was asked:
//
//   - Resume and Continue exclude each other (the CLI lets --continue win);
//   - Resume, when set, must not be blank;
//   - SessionID must be a UUID in canonical 8-4-4-4-12 form;
//   - SessionID together with Resume or Continue requires ForkSession;
//   - ForkSession requires Resume or Continue (the CLI ignores it otherwise);
//   - PermissionMode must be "" or one of default, acceptEdits, auto,
//     bypassPermissions, manual, dontAsk, plan.
//
// The error is an [*ArgError].
func (o Options) Validate() error {
	switch {
	case o.Resume != "" && o.Continue:
		return &ArgError{"--continue", "--resume and --continue exclude each other (the CLI would silently let --continue win)"}
	case o.Resume != "" && strings.TrimSpace(o.Resume) == "":
		return &ArgError{"--resume", "--resume needs a session id, got a blank string"}
	case o.SessionID != "" && !validUUID(o.SessionID):
		return &ArgError{"--session-id", "--session-id " + quote(o.SessionID) + " is not a valid UUID"}
	case o.SessionID != "" && (o.Resume != "" || o.Continue) && !o.ForkSession:
		return &ArgError{"--session-id", "--session-id with --continue or --resume also needs --fork-session"}
	case o.ForkSession && o.Resume == "" && !o.Continue:
		return &ArgError{"--fork-session", "--fork-session needs --resume or --continue (the CLI would silently ignore it)"}
	case o.PermissionMode != "" && !slices.Contains(permissionModes, o.PermissionMode):
		return &ArgError{"--permission-mode", "--permission-mode " + quote(o.PermissionMode) + " is not one of " + strings.Join(permissionModes, ", ")}
	}
	return nil
}

// BuildArgs returns base followed by the flags for o and then o.Extra. It
// does not modify base. Every flag with a value is written as one argument in
// --flag=value form, so a value that starts with "-" can never be taken for
// a flag. The order is --model, --permission-mode, --resume or --continue,
// --fork-session, --session-id, Extra. An invalid o gives an [*ArgError] and
// no arguments.
func BuildArgs(base []string, o Options) ([]string, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	args := make([]string, 0, len(base)+6+len(o.Extra))
	args = append(args, base...)
	if o.Model != "" {
		args = append(args, "--model="+o.Model)
	}
	if o.PermissionMode != "" {
		args = append(args, "--permission-mode="+o.PermissionMode)
	}
	if o.Resume != "" {
		args = append(args, "--resume="+o.Resume)
	}
	if o.Continue {
		args = append(args, "--continue")
	}
	if o.ForkSession {
		args = append(args, "--fork-session")
	}
	if o.SessionID != "" {
		args = append(args, "--session-id="+o.SessionID)
	}
	return append(args, o.Extra...), nil
}

// validUUID accepts exactly the CLI's form:
// /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.
// uuid.Parse alone would also accept braces, "urn:uuid:" and undashed hex.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strconv.Quote(s)
}

// ArgValue returns the value of a CLI flag given as "--name value" or
// "--name=value", or "" when absent. The last occurrence wins, as in the CLI.
func ArgValue(args []string, name string) string {
	v := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return v
		case a == name && i+1 < len(args):
			v = args[i+1]
			i++
		case len(a) > len(name) && a[:len(name)] == name && a[len(name)] == '=':
			v = a[len(name)+1:]
		}
	}
	return v
}

// WithSessionID gives a new session, and a fork, a fresh session id when
// o has none, so that the UI knows the id before the first turn.
func (o Options) WithSessionID() Options {
	if o.Resume == "" && !o.Continue && o.SessionID == "" {
		o.SessionID = uuid.NewString()
	}
	if o.ForkSession && o.SessionID == "" {
		o.SessionID = uuid.NewString()
	}
	return o
}

// ID is the session id o gives the CLI, or "" (a continued session, whose
// id the CLI tells).
func (o Options) ID() string {
	switch {
	case o.SessionID != "":
		return o.SessionID
	case o.Resume != "" && !o.ForkSession:
		return o.Resume
	}
	return ""
}

// Resumes reports whether the first child of a session with these options
// resumes a session file: a resumed or continued session does; a fork has
// no session file of its own until its first turn.
func (o Options) Resumes() bool { return (o.Resume != "" || o.Continue) && !o.ForkSession }
