package session_test

import (
	"fmt"

	"github.com/ccbridge/ccbridge/session"
)

func ExampleBuildArgs() {
	base := []string{"--output-format", "stream-json", "--input-format", "stream-json", "--verbose"}
	opts := session.Options{Model: "claude-sonnet-4-5", Continue: true}

	// After a crash, respawn on the session the CLI reported.
	args, err := session.BuildArgs(base, opts.ResumeFrom("-odd-id"))
	fmt.Println(args[len(base):], err)

	_, err = session.BuildArgs(base, session.Options{ForkSession: true})
	fmt.Println(err)
	// Output:
	// [--model=claude-sonnet-4-5 --resume=-odd-id] <nil>
	// session: invalid CLI options: --fork-session needs --resume or --continue (the CLI would silently ignore it)
}
