package session

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBuildArgs(t *testing.T) {
	t.Parallel()
	const id = "8c5b3a7e-1f2d-4c3b-9a8e-7d6c5b4a3f21"
	base := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}
	for _, tc := range []struct {
		name    string
		o       Options
		want    []string // after base
		errFlag string   // non-empty: want an *ArgError for this flag
	}{
		{name: "zero", o: Options{}, want: nil},
		{name: "model and mode", o: Options{Model: "claude-sonnet-4-5", PermissionMode: "acceptEdits"},
			want: []string{"--model=claude-sonnet-4-5", "--permission-mode=acceptEdits"}},
		{name: "bad permission mode", o: Options{PermissionMode: "bogus"}, errFlag: "--permission-mode"},
		{name: "permission mode is case sensitive", o: Options{PermissionMode: "acceptedits"}, errFlag: "--permission-mode"},
		{name: "resume", o: Options{Resume: id}, want: []string{"--resume=" + id}},
		{name: "resume value that looks like a flag", o: Options{Resume: "-weird"}, want: []string{"--resume=-weird"}},
		{name: "model value that looks like a flag", o: Options{Model: "--help"}, want: []string{"--model=--help"}},
		{name: "blank resume", o: Options{Resume: "  "}, errFlag: "--resume"},
		{name: "continue", o: Options{Continue: true}, want: []string{"--continue"}},
		{name: "resume and continue", o: Options{Resume: id, Continue: true}, errFlag: "--continue"},
		{name: "session id", o: Options{SessionID: id}, want: []string{"--session-id=" + id}},
		{name: "session id upper case", o: Options{SessionID: strings.ToUpper(id)}, want: []string{"--session-id=" + strings.ToUpper(id)}},
		{name: "session id not a uuid", o: Options{SessionID: "not-a-uuid"}, errFlag: "--session-id"},
		{name: "session id without dashes", o: Options{SessionID: strings.ReplaceAll(id, "-", "")}, errFlag: "--session-id"},
		{name: "session id in braces", o: Options{SessionID: "{" + id + "}"}, errFlag: "--session-id"},
		{name: "session id urn", o: Options{SessionID: "urn:uuid:" + id}, errFlag: "--session-id"},
		{name: "session id with resume, no fork", o: Options{Resume: "abc", SessionID: id}, errFlag: "--session-id"},
		{name: "session id with continue, no fork", o: Options{Continue: true, SessionID: id}, errFlag: "--session-id"},
		{name: "fork resume with session id", o: Options{Resume: "abc", ForkSession: true, SessionID: id},
			want: []string{"--resume=abc", "--fork-session", "--session-id=" + id}},
		{name: "fork continue", o: Options{Continue: true, ForkSession: true}, want: []string{"--continue", "--fork-session"}},
		{name: "fork alone", o: Options{ForkSession: true}, errFlag: "--fork-session"},
		{name: "fork with only session id", o: Options{ForkSession: true, SessionID: id}, errFlag: "--fork-session"},
		{name: "extra verbatim at the end", o: Options{Model: "m", Extra: []string{"--max-turns", "5", "-x", ""}},
			want: []string{"--model=m", "--max-turns", "5", "-x", ""}},
		{name: "everything", o: Options{Model: "m", PermissionMode: "plan", Resume: "r", ForkSession: true, SessionID: id, Extra: []string{"--debug"}},
			want: []string{"--model=m", "--permission-mode=plan", "--resume=r", "--fork-session", "--session-id=" + id, "--debug"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			baseCopy := slices.Clone(base)
			got, err := BuildArgs(baseCopy, tc.o)
			if !slices.Equal(baseCopy, base) {
				t.Errorf("BuildArgs modified base: %q", baseCopy)
			}
			if tc.errFlag != "" {
				var ae *ArgError
				if !errors.As(err, &ae) || ae.Flag != tc.errFlag || !errors.Is(err, ErrInvalidArgs) {
					t.Fatalf("BuildArgs = %q, %v; want *ArgError for %s", got, err, tc.errFlag)
				}
				if got != nil {
					t.Errorf("BuildArgs returned args with an error: %q", got)
				}
				if !strings.Contains(err.Error(), tc.errFlag) {
					t.Errorf("error %q does not name %s", err, tc.errFlag)
				}
				return
			}
			if err != nil {
				t.Fatalf("BuildArgs: %v", err)
			}
			if !slices.Equal(got[:len(base)], base) {
				t.Errorf("args do not start with base: %q", got)
			}
			if rest := got[len(base):]; !slices.Equal(rest, tc.want) {
				t.Errorf("args after base = %q, want %q", rest, tc.want)
			}
		})
	}
}

func TestPermissionModes(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"default", "acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan"} {
		got, err := BuildArgs(nil, Options{PermissionMode: m})
		if err != nil || !slices.Equal(got, []string{"--permission-mode=" + m}) {
			t.Errorf("BuildArgs(%s) = %q, %v", m, got, err)
		}
	}
}

func TestBuildArgsNilBase(t *testing.T) {
	t.Parallel()
	got, err := BuildArgs(nil, Options{Continue: true})
	if err != nil || !slices.Equal(got, []string{"--continue"}) {
		t.Errorf("BuildArgs(nil, continue) = %q, %v", got, err)
	}
}

func TestArgErrorMessages(t *testing.T) {
	t.Parallel()
	_, err := BuildArgs(nil, Options{Resume: "x", SessionID: "8c5b3a7e-1f2d-4c3b-9a8e-7d6c5b4a3f21"})
	want := "session: invalid CLI options: --session-id with --continue or --resume also needs --fork-session"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestResumeFrom(t *testing.T) {
	t.Parallel()
	const id = "8c5b3a7e-1f2d-4c3b-9a8e-7d6c5b4a3f21"
	o := Options{Model: "m", PermissionMode: "plan", Continue: true, ForkSession: true, SessionID: id, Extra: []string{"--debug"}}
	r := o.ResumeFrom("sess-1")
	want := Options{Model: "m", PermissionMode: "plan", Resume: "sess-1", Extra: []string{"--debug"}}
	if r.Model != want.Model || r.PermissionMode != want.PermissionMode || r.Resume != want.Resume ||
		r.Continue || r.ForkSession || r.SessionID != "" || !slices.Equal(r.Extra, want.Extra) {
		t.Errorf("ResumeFrom = %+v, want %+v", r, want)
	}
	r.Extra[0] = "changed"
	if o.Extra[0] != "--debug" {
		t.Error("ResumeFrom shares Extra with the original")
	}
	if _, err := BuildArgs(nil, r); err != nil {
		t.Errorf("BuildArgs(ResumeFrom) = %v", err)
	}
}
