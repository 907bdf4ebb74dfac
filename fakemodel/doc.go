// Package fakemodel is a fake Anthropic Messages API for running the real
// Claude Code CLI offline, deterministically and at no cost.
//
// It serves POST /v1/messages (streaming server-sent events and plain JSON),
// POST /v1/messages/count_tokens, GET /v1/models and a connectivity answer
// on "/", on 127.0.0.1 only; and OpenAI's Responses API, POST /v1/responses,
// as the Codex CLI speaks it (Server.CodexConfig points Codex at it). Any other endpoint gets a 404 Anthropic error
// body at once and a debug log line, never a hang.
//
// Responses are scripted by a Scenario (a JSON file, see docs/fake-model.md,
// or the built-in "default"), and chosen statelessly from each request: a
// rule matches the latest user prompt (a keyword, substring or regular
// expression), and the step index is the number of assistant turns since
// that prompt. Concurrent sessions, subagents and resumed sessions therefore
// all behave the same way, whatever server answers them.
//
// Typical use:
//
//	sc, err := fakemodel.Load("default") // or a path to a JSON file
//	srv, err := fakemodel.Start(sc, logger)
//	defer srv.Close()
//	cmd.Env = append(os.Environ(), srv.Env()...) // plus HOME=<scratch dir>
package fakemodel
