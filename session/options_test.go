package session

import (
	"testing"

	"github.com/google/uuid"
)

func TestArgValue(t *testing.T) {
	args := []string{"--model", "a", "--input-format=stream-json", "--resume", "r1", "--", "--model", "z"}
	for name, want := range map[string]string{"--model": "a", "--input-format": "stream-json", "--resume": "r1", "--absent": ""} {
		if got := ArgValue(args, name); got != want {
			t.Errorf("ArgValue(%s) = %q, want %q", name, got, want)
		}
	}
}

// TestOptionsSessionID: a new session and a fork get a fresh id; a resume
// keeps its own, a continue has none until the CLI tells it.
func TestOptionsSessionID(t *testing.T) {
	for _, c := range []struct {
		o       Options
		fresh   bool
		id      string
		resumes bool
	}{
		{Options{}, true, "", false},
		{Options{SessionID: "s"}, false, "s", false},
		{Options{Resume: "r"}, false, "r", true},
		{Options{Resume: "r", ForkSession: true}, true, "", false},
		{Options{Continue: true}, false, "", true},
		{Options{Continue: true, ForkSession: true}, true, "", false},
	} {
		if c.o.Resumes() != c.resumes {
			t.Errorf("%+v: Resumes %v, want %v", c.o, !c.resumes, c.resumes)
		}
		got := c.o.WithSessionID()
		if c.fresh {
			if uuid.Validate(got.SessionID) != nil || got.ID() != got.SessionID {
				t.Errorf("%+v: session id %q (ID %q), want a fresh UUID", c.o, got.SessionID, got.ID())
			}
			continue
		}
		if got.SessionID != c.o.SessionID || got.ID() != c.id {
			t.Errorf("%+v: %+v with ID %q, want it unchanged with ID %q", c.o, got, got.ID(), c.id)
		}
	}
}
