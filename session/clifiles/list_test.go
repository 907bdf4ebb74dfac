package clifiles

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ccbridge/ccbridge/mapping"
)

// Session file lines for the tests.
const (
	queueLine = `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-01-01T00:00:00Z"}`
	metaLine  = `{"type":"user","isMeta":true,"cwd":"/p","message":{"role":"user","content":"<local-command-caveat>c</local-command-caveat>"}}`
	sideUser  = `{"type":"user","isSidechain":true,"cwd":"/p","message":{"role":"user","content":"a subagent's task"}}`
	sideReply = `{"type":"assistant","isSidechain":true,"message":{"id":"m0","content":[{"type":"text","text":"x"}]}}`
	summary   = `{"type":"summary","summary":"a summary","leafUuid":"u"}`
)

func prompt(text string) string {
	return `{"type":"user","cwd":"/p","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"` + text + `"}}`
}

func reply(id string) string {
	return `{"type":"assistant","message":{"id":"` + id + `","content":[{"type":"text","text":"ok"}]}}`
}

// lines joins lines into a file's content.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// TestConversationsRule: the files listed are those with a prompt or an
// assistant message of the main conversation, newest first; side entries
// and bookkeeping alone are not listed, nor are files that are not
// session files.
func TestConversationsRule(t *testing.T) {
	cfg, cwd := t.TempDir(), "/work/p"
	dir := ProjectDir(cfg, cwd)
	now := time.Now().Truncate(time.Second)
	for i, f := range []struct{ name, content string }{
		{"prompt", lines(queueLine, prompt("hello"))},
		{"reply only", lines(reply("m1"))},
		{"side entries", lines(queueLine, metaLine, sideUser, sideReply)},
		{"summary", lines(summary)},
		{"empty", ""},
		{"not json", "user\nassistant\n"},
		{"command", lines(`{"type":"user","message":{"role":"user","content":"<command-name>/cost</command-name>"}}`)},
		{"tool result only", lines(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"}]}}`)},
	} {
		mkfile(t, filepath.Join(dir, u(f.name)+".jsonl"), f.content, now.Add(-time.Duration(i)*time.Minute))
	}
	mkfile(t, filepath.Join(dir, "agent-1.jsonl"), lines(prompt("not a session id")), now.Add(time.Hour))
	files, err := List(cfg, cwd)
	if err != nil || len(files) != 8 {
		t.Fatalf("List: %q, %v", ids(files), err)
	}
	page, more, err := Conversations(context.Background(), files, 0, 0, nil)
	if err != nil || more {
		t.Fatalf("Conversations: more %v, %v", more, err)
	}
	var got []string
	for _, in := range page {
		got = append(got, in.ID)
	}
	if want := us("prompt", "reply only", "command"); !slices.Equal(got, want) {
		t.Errorf("listed %q, want %q", got, want)
	}
	if in := page[0]; in.FirstPrompt != "hello" || in.CWD != "/p" || in.CreatedAt != "2026-01-01T00:00:00Z" || in.Path != filepath.Join(dir, u("prompt")+".jsonl") || in.Size == 0 {
		t.Errorf("the first: %+v", in)
	}
}

// TestConversationsPaging: offset and limit count the conversations (and
// those keep accepts) only; more says whether one follows.
func TestConversationsPaging(t *testing.T) {
	cfg, cwd := t.TempDir(), "/work/p"
	dir := ProjectDir(cfg, cwd)
	now := time.Now().Truncate(time.Second)
	var want []string
	for i := range 7 {
		name := fmt.Sprint("s", i)
		mkfile(t, filepath.Join(dir, u(name)+".jsonl"), lines(prompt(name)), now.Add(-time.Duration(2*i)*time.Minute))
		want = append(want, u(name))
		// Between each two conversations, a file without one.
		mkfile(t, filepath.Join(dir, u("empty"+name)+".jsonl"), lines(summary), now.Add(-time.Duration(2*i+1)*time.Minute))
	}
	files, _ := List(cfg, cwd)
	ctx := context.Background()
	for _, c := range []struct {
		offset, limit int
		want          []string
		more          bool
	}{
		{0, 0, want, false},
		{0, 3, want[:3], true},
		{3, 3, want[3:6], true},
		{6, 3, want[6:], false},
		{4, 3, want[4:], false}, // exactly the rest
		{7, 3, nil, false},
		{100, 3, nil, false},
		{0, 100, want, false},
	} {
		page, more, err := Conversations(ctx, files, c.offset, c.limit, nil)
		if got := infoIDs(page); err != nil || more != c.more || !slices.Equal(got, c.want) {
			t.Errorf("offset %d limit %d: %q more %v (%v), want %q more %v", c.offset, c.limit, got, more, err, c.want, c.more)
		}
	}
	odd := func(in *Info) bool { return strings.TrimPrefix(in.FirstPrompt, "s")[0]%2 == 1 }
	page, more, _ := Conversations(ctx, files, 1, 1, odd)
	if got := infoIDs(page); !slices.Equal(got, us("s3")) || !more {
		t.Errorf("keep: %q more %v", got, more)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if page, _, err := Conversations(cancelled, files, 0, 0, nil); !errors.Is(err, context.Canceled) || page != nil {
		t.Errorf("cancelled: %q, %v", infoIDs(page), err)
	}
	// A file removed after the listing is left out.
	if err := os.Remove(files[0].Path); err != nil {
		t.Fatal(err)
	}
	if page, _, _ := Conversations(ctx, files, 0, 2, nil); !slices.Equal(infoIDs(page), want[1:3]) {
		t.Errorf("after a removal: %q", infoIDs(page))
	}
}

func infoIDs(page []Info) []string {
	var out []string
	for _, in := range page {
		out = append(out, in.ID)
	}
	return out
}

// endsReader is a file of size bytes whose first and last bytes are head
// and tail (the rest spaces); it records what is read of it.
type endsReader struct {
	size       int64
	head, tail []byte
	reads      [][2]int64 // [offset, end)
}

func (r *endsReader) ReadAt(p []byte, off int64) (int, error) {
	r.reads = append(r.reads, [2]int64{off, off + int64(len(p))})
	for i := range p {
		at := off + int64(i)
		switch {
		case at >= r.size:
			return i, errors.New("EOF")
		case at < int64(len(r.head)):
			p[i] = r.head[at]
		case at >= r.size-int64(len(r.tail)):
			p[i] = r.tail[at-(r.size-int64(len(r.tail)))]
		default:
			p[i] = ' '
		}
	}
	return len(p), nil
}

// TestReadEndsHugeFile: of a file of a terabyte, the first and the last
// EndBytes are read (and one byte before the tail), nothing else; the
// summary takes the first prompt and the working directory from the head,
// the latest prompt and the title from the tail.
func TestReadEndsHugeFile(t *testing.T) {
	r := &endsReader{
		size: 1 << 40,
		head: []byte(lines(queueLine, prompt("the first prompt"), reply("m1"), `{"type":"user","message":{"content":"cut by the head's end`)),
		tail: []byte(`n":"cut by the tail's start"}}` + "\n" + lines(prompt("the last prompt"), `{"type":"ai-title","aiTitle":"A title"}`)),
	}
	var s Info
	buf := make([]byte, 2*EndBytes+1)
	readEnds(r, r.size, buf, s.Line)
	for _, rd := range r.reads {
		if !(rd[0] == 0 && rd[1] <= EndBytes) && !(rd[0] >= r.size-EndBytes-1 && rd[1] <= r.size) {
			t.Errorf("read [%d, %d) of a file of %d bytes", rd[0], rd[1], r.size)
		}
	}
	if len(r.reads) != 2 {
		t.Errorf("%d reads, want 2", len(r.reads))
	}
	if s.FirstPrompt != "the first prompt" || s.LastPrompt != "the last prompt" || s.AITitle != "A title" || s.CWD != "/p" || s.Messages != 3 {
		t.Errorf("summary: %+v", s.SessionSummary)
	}
}

// TestReadHugeFile: a real file much longer than its two ends; what lies
// between them is not read, not even a prompt.
func TestReadHugeFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, head, middle, tail string) Session {
		t.Helper()
		path := filepath.Join(dir, u(name)+".jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		const size = 1 << 30 // sparse: the gaps are holes
		if _, err := f.WriteAt([]byte(head), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("\n"+middle), size/2); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte(tail), size-int64(len(tail))); err != nil {
			t.Fatal(err)
		}
		return Session{ID: u(name), Path: path}
	}
	start := time.Now()
	in, err := Read(write("conversation", lines(prompt("first")), lines(`{"type":"custom-title","customTitle":"MIDDLE"}`), "\n"+lines(reply("m9"), `{"type":"last-prompt","lastPrompt":"last"}`)))
	if err != nil || !in.Conversation() || in.FirstPrompt != "first" || in.LastPrompt != "last" || in.CustomTitle != "" {
		t.Errorf("Read: %+v, %v", in.SessionSummary, err)
	}
	// A prompt between the ends is not seen: side entries at both ends.
	in, err = Read(write("sides", lines(queueLine, sideUser), lines(prompt("MIDDLE")), "\n"+lines(sideReply, summary)))
	if err != nil || in.Conversation() || in.LastPrompt != "" {
		t.Errorf("Read of side entries: %+v, %v", in.SessionSummary, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("reading two ends took %v", d)
	}
}

// TestReadBounds: files around 2*EndBytes: whole up to it; beyond, a line
// across a bound is skipped, and a tail that begins with a whole line
// keeps it.
func TestReadBounds(t *testing.T) {
	dir := t.TempDir()
	read := func(content string) Info {
		t.Helper()
		path := filepath.Join(dir, "f.jsonl")
		mkfile(t, path, content, time.Now())
		in, err := Read(Session{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	// pad is a bookkeeping line of n bytes with its newline.
	pad := func(n int) string {
		l := `{"type":"queue-operation","x":""}`
		return l[:len(l)-2] + strings.Repeat("x", n-len(l)-1) + `"}` + "\n"
	}
	mid := prompt("middle") + "\n"
	// Exactly 2*EndBytes: all of it, the middle prompt included.
	whole := pad(EndBytes-len(mid)/2) + mid
	whole += pad(2*EndBytes - len(whole))
	if len(whole) != 2*EndBytes {
		t.Fatalf("%d bytes", len(whole))
	}
	if in := read(whole); in.LastPrompt != "middle" {
		t.Errorf("a file of 2*EndBytes: %+v", in.SessionSummary)
	}
	// One byte more: the prompt spans the head's end, and is skipped.
	if in := read(" " + whole); in.LastPrompt != "" || in.Conversation() {
		t.Errorf("a prompt across the head's end: %+v", in.SessionSummary)
	}
	// A tail that starts right at a line is whole.
	last := prompt("at the tail's start") + "\n"
	c := pad(EndBytes+100) + last + pad(EndBytes-len(last))
	if in := read(c); in.LastPrompt != "at the tail's start" {
		t.Errorf("a line at the tail's start: %+v", in.SessionSummary)
	}
	// One byte later, it is cut.
	c = pad(EndBytes+100) + last + pad(EndBytes-len(last)+1)
	if in := read(c); in.LastPrompt != "" {
		t.Errorf("a line cut by the tail's start: %+v", in.SessionSummary)
	}
	// \r\n line ends and a last line without one.
	if in := read(prompt("one") + "\r\n" + prompt("two")); in.LastPrompt != "two" || in.Messages != 2 {
		t.Errorf("line ends: %+v", in.SessionSummary)
	}
	if _, err := Read(Session{Path: filepath.Join(dir, "missing")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestSummarize: the whole file, where Read takes its ends.
func TestSummarize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	var b strings.Builder
	for i := range 3000 {
		b.WriteString(lines(prompt(fmt.Sprint("p", i)), reply(fmt.Sprint("m", i))))
	}
	mkfile(t, path, b.String(), time.Now())
	s, err := Summarize(context.Background(), path)
	if err != nil || s.Messages != 6000 || s.FirstPrompt != "p0" || s.LastPrompt != "p2999" {
		t.Errorf("Summarize: %+v, %v", s, err)
	}
	in, _ := Read(Session{Path: path})
	if in.Messages >= 6000 || in.FirstPrompt != "p0" || in.LastPrompt != "p2999" {
		t.Errorf("Read: %+v", in.SessionSummary)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Summarize(ctx, path); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Summarize(context.Background(), path+"x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// TestReadCache: Read keeps what it found in a file for as long as the
// file's size and modification time are those it had: a file rewritten
// with the same size and time is not read again (the cache answers), one
// with another time or size is; a removed file is an error, cached or not;
// the cache holds at most summaryCacheSize files.
func TestReadCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), u("cached")+".jsonl")
	mod := time.Now().Add(-time.Hour).Truncate(time.Second)
	mkfile(t, path, lines(prompt("one")), mod)
	read := func() string {
		t.Helper()
		in, err := Read(Session{ID: u("cached"), Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return in.LastPrompt
	}
	if got := read(); got != "one" {
		t.Fatalf("first Read: %q", got)
	}
	mkfile(t, path, lines(prompt("two")), mod) // same size, same time
	if got := read(); got != "one" {
		t.Errorf("same size and time: %q, want the cached \"one\"", got)
	}
	mkfile(t, path, lines(prompt("two")), mod.Add(time.Second))
	if got := read(); got != "two" {
		t.Errorf("another time: %q, want \"two\"", got)
	}
	mkfile(t, path, lines(prompt("two"), prompt("three")), mod.Add(time.Second))
	if got := read(); got != "three" {
		t.Errorf("another size: %q, want \"three\"", got)
	}
	os.Remove(path)
	if _, err := Read(Session{ID: u("cached"), Path: path}); err == nil {
		t.Errorf("a removed file was read from the cache")
	}

	for i := range summaryCacheSize + 10 {
		summaries.put(fmt.Sprintf("/nowhere/%d", i), 1, mod, mapping.SessionSummary{})
	}
	summaries.mu.Lock()
	n := len(summaries.m)
	summaries.mu.Unlock()
	if n > summaryCacheSize {
		t.Errorf("the cache holds %d summaries, over %d", n, summaryCacheSize)
	}
}

// BenchmarkReadCached is Read of an unchanged file: a stat and the cache.
func BenchmarkReadCached(b *testing.B) {
	path := filepath.Join(b.TempDir(), u("bench")+".jsonl")
	content := lines(prompt("first")) + strings.Repeat(lines(reply("m")), 20000) + lines(prompt("last"))
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	f := Session{ID: u("bench"), Path: path}
	for b.Loop() {
		if in, err := Read(f); err != nil || in.LastPrompt != "last" {
			b.Fatal(in.LastPrompt, err)
		}
	}
}
