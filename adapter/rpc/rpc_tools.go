package rpc

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/mapping/rpc"
	"github.com/ccbridge/ccbridge/session"
)

// tool.call, auth.logout, shell.output and the initialize answer's theme
// (docs/protocol/rpc.md).

// The shell.exec output cache: where a stream longer than the head and
// tail shell.exec answers with is kept whole, for shell.output.
const (
	// shellCacheMax is the most kept of one stream; a longer output is
	// kept up to there (complete false).
	shellCacheMax = 16 << 20
	// shellCacheEntries is how many streams are kept; the oldest goes
	// first.
	shellCacheEntries = 8
	// shellCacheTTL is how long one is kept after its command ended.
	shellCacheTTL = 30 * time.Minute
)

// spilledOutput is a stream runShell wrote to a file (path "" when it
// fit in memory).
type spilledOutput struct {
	path, stream string
	kept         int64
	complete     bool
}

// outputCache holds the spilled streams of shell.exec, by cache id, in
// files of a private folder (mode 0700, files 0600, under the system's
// temporary folder) that goes when the connection ends. It is owned by
// the loop; spiller's function runs in the command's goroutines and only
// makes files.
type outputCache struct {
	dir     session.PrivateDir
	entries map[string]*cachedOutput
	order   []string // ids, oldest first
	n       int
	log     interface{ Warn(string, ...any) }
}

type cachedOutput struct {
	spilledOutput
	at time.Time
}

// spiller returns the function that makes a spill file.
func (c *outputCache) spiller() func() (*os.File, error) {
	return func() (*os.File, error) {
		path, err := c.dir.WriteFile("shell-*.out", nil)
		if err != nil {
			return nil, err
		}
		return os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	}
}

// add keeps the spilled streams of one command, and returns their cache
// ids ("" for a stream that fit).
func (c *outputCache) add(s [2]spilledOutput, now time.Time) (stdoutID, stderrID string) {
	c.expire(now)
	var ids [2]string
	for i, o := range s {
		if o.path == "" {
			continue
		}
		c.n++
		id := "shell-out-" + strconv.Itoa(c.n) + "-" + o.stream
		if c.entries == nil {
			c.entries = map[string]*cachedOutput{}
		}
		c.entries[id] = &cachedOutput{spilledOutput: o, at: now}
		c.order = append(c.order, id)
		ids[i] = id
	}
	for len(c.order) > shellCacheEntries {
		c.drop(c.order[0])
	}
	return ids[0], ids[1]
}

// discard removes spilled files nobody will read.
func (c *outputCache) discard(s [2]spilledOutput) {
	for _, o := range s {
		if o.path != "" {
			c.remove(o.path)
		}
	}
}

func (c *outputCache) remove(path string) {
	if err := c.dir.RemoveFile(path); err != nil && c.log != nil {
		c.log.Warn("removing a cached shell output", "path", path, "err", err)
	}
}

func (c *outputCache) drop(id string) {
	if e := c.entries[id]; e != nil {
		c.remove(e.path)
		delete(c.entries, id)
	}
	for i, o := range c.order {
		if o == id {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// expire drops what is older than shellCacheTTL.
func (c *outputCache) expire(now time.Time) {
	for len(c.order) > 0 && now.Sub(c.entries[c.order[0]].at) >= shellCacheTTL {
		c.drop(c.order[0])
	}
}

// get is the cached stream id, or nil.
func (c *outputCache) get(id string, now time.Time) *cachedOutput {
	c.expire(now)
	return c.entries[id]
}

// close removes every cached output (the connection ended).
func (c *outputCache) close() {
	if err := c.dir.Remove(); err != nil && c.log != nil {
		c.log.Warn("removing the shell output cache", "path", c.dir.Path(), "err", err)
	}
}

// readOutput reads part of a cached stream (off the loop).
func readOutput(e cachedOutput, id string, offset, maxBytes int64) (rpc.ShellOutput, error) {
	out := rpc.ShellOutput{CacheID: id, Stream: e.stream, Offset: offset, Total: e.kept, Complete: e.complete}
	f, err := os.Open(e.path)
	if err != nil {
		return out, err
	}
	defer f.Close()
	n := max(e.kept-offset, 0)
	if maxBytes > 0 {
		n = min(n, maxBytes)
	}
	out.Content = make([]byte, n)
	k, err := f.ReadAt(out.Content, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return out, err
	}
	out.Content = out.Content[:k]
	out.EOF = offset+int64(k) >= e.kept
	return out, nil
}

// shellOutput serves shell.output, and tool.call of tool_output_cache
// (asTool): a cached stream, whole or from offset.
func (l *rpcLoop) shellOutput(id string, o rpc.ShellOutputParams, asTool bool) {
	e := l.outputs.get(o.CacheID, l.loop.Now())
	if e == nil {
		l.respondErr(id, &rpc.Error{Code: rpc.CodeInvalidParams,
			Message: "no cached output " + strconv.Quote(o.CacheID) + " (a shell.exec cache id, kept " + shellCacheTTL.String() + ", the last " + strconv.Itoa(shellCacheEntries) + " only)",
			Data:    `{"reason":"unknown_cache_id"}`})
		return
	}
	entry := *e
	method := rpc.MethodShellOutput
	if asTool {
		method = rpc.MethodToolCall
	}
	l.goRequest(id, method, func(context.Context) func() {
		out, err := readOutput(entry, o.CacheID, o.Offset, o.MaxBytes)
		return func() {
			if !l.finish(id) {
				return
			}
			switch {
			case err != nil:
				l.respondErr(id, rpc.Internal("reading the cached output: "+err.Error()))
			case asTool:
				l.respond(id, rpc.AppendShellOutputToolResult(nil, id, out))
			default:
				l.respond(id, rpc.AppendShellOutputResult(nil, id, out))
			}
		}
	})
}

// toolCall serves tool.call: Read through the CLI's read_file, an MCP
// tool through its mcp_call, the output cache here.
func (l *rpcLoop) toolCall(id string, p gjson.Result) {
	tc, err := rpc.ParseToolCall(p)
	if err != nil {
		l.respondErr(id, err)
		return
	}
	if tc.Control == "" {
		l.shellOutput(id, tc.Output, true)
		return
	}
	build := func(reqID string) []byte { return appendControl(reqID, tc.Control) }
	l.cliRefusable(id, rpc.MethodToolCall, gjson.Get(tc.Control, "subtype").Str, build, func(resp gjson.Result, refusal string) {
		if refusal != "" {
			l.log.Info("tool.call refused by the CLI", "tool", tc.Name, "why", refusal)
		}
		l.respond(id, rpc.AppendToolCallResult(nil, id, refusal == "", resp, refusal))
	})
}

// authLogout serves auth.logout: the CLI's own logout (session.Logout),
// off the loop. auth_cleared is true only when a stored login was there
// and is gone; the session's conversation stays (session_cleared false).
func (l *rpcLoop) authLogout(id string, p gjson.Result) {
	if _, err := rpc.ParseAuthLogout(p); err != nil {
		l.respondErr(id, err)
		return
	}
	cfg := l.cfg.Child
	cfg.Dir = l.cwd
	l.goRequest(id, rpc.MethodAuthLogout, func(ctx context.Context) func() {
		r, err := session.Logout(ctx, cfg)
		return func() {
			if !l.finish(id) {
				return
			}
			if err != nil {
				l.respondErr(id, rpc.Internal("logging out: "+err.Error()))
				return
			}
			l.log.Info("auth.logout", "cleared", r.Cleared, "before", r.Before.Method, "after", r.After.Method)
			l.respond(id, rpc.AppendAuthLogoutResult(nil, id, r.Cleared, r.Output))
		}
	})
}

// theme is the CLI's theme, as the CLI reads it: "theme" of its global
// configuration, $CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json;
// "dark" (the CLI's default) when it names none.
func (l *rpcLoop) theme() string {
	path := ""
	if d := l.getenv("CLAUDE_CONFIG_DIR"); d != "" {
		path = filepath.Join(d, ".claude.json")
	} else if h := l.getenv("HOME"); h != "" {
		path = filepath.Join(h, ".claude.json")
	}
	if path != "" {
		if b, err := readSmall(path, 4<<20); err == nil {
			if t := gjson.GetBytes(b, "theme"); t.Type == gjson.String && t.Str != "" {
				return t.Str
			}
		}
	}
	return "dark"
}

// readSmall reads a file of at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, max))
}
