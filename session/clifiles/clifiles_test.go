package clifiles

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestGetenv(t *testing.T) {
	fallback := func(k string) string { return "fallback-" + k }
	env := []string{"A=1", "B", "A=2", "C=", "AB=x"}
	for key, want := range map[string]string{
		"A": "2",          // the last entry wins
		"B": "fallback-B", // an entry without "=" is no entry
		"C": "",           // set to empty in env: empty, not the fallback
		"D": "fallback-D",
	} {
		if got := Getenv(env, fallback, key); got != want {
			t.Errorf("Getenv(%q) = %q, want %q", key, got, want)
		}
	}
	t.Setenv("CLIFILES_TEST_VAR", "from ccbridge")
	if got := Getenv(nil, nil, "CLIFILES_TEST_VAR"); got != "from ccbridge" {
		t.Errorf("a nil fallback is not os.Getenv: %q", got)
	}
}

func TestConfigDir(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string { return Getenv(kv, func(string) string { return "" }, k) }
	}
	if got := ConfigDir(env("CLAUDE_CONFIG_DIR=/cfg", "HOME=/home/u")); got != "/cfg" {
		t.Errorf("CLAUDE_CONFIG_DIR: %q", got)
	}
	if got := ConfigDir(env("HOME=/home/u")); got != "/home/u/.claude" {
		t.Errorf("HOME: %q", got)
	}
	// No HOME as the child sees it: os.UserHomeDir, which reads ccbridge's.
	t.Setenv("HOME", "/home/ccbridge")
	if got := ConfigDir(env()); got != "/home/ccbridge/.claude" {
		t.Errorf("os.UserHomeDir: %q", got)
	}
}

// TestProjectDirName: the folder names the real CLI 2.1.330 made under a
// scratch HOME for these working directories.
func TestProjectDirName(t *testing.T) {
	long := "/tmp/clx/w/" + strings.Repeat("a", 90) + "/😀é-" + strings.Repeat("b", 100) + "/ü😀x"
	for cwd, want := range map[string]string{
		"/home/user/project":      "-home-user-project",
		"/tmp/exp/my.dir_x y":     "-tmp-exp-my-dir-x-y",
		"/tmp/acpx/my proj_x.y-z": "-tmp-acpx-my-proj-x-y-z",
		"/tmp/exp/ünï cödé":       "-tmp-exp--n--c-d-",
		"/x/😀":                    "-x---",   // one character outside the BMP is two UTF-16 units
		"/a/é/😀":                  "-a-----", // é is one unit, 😀 two
		"/tmp/exp/" + strings.Repeat("a", 120) + "/" + strings.Repeat("b", 120): "-tmp-exp-" + strings.Repeat("a", 120) + "-" + strings.Repeat("b", 70) + "-9tim16",
		// Over 200 units with characters outside the BMP on both sides of
		// the cut: each counts two units, and the hash runs over them.
		long: "-tmp-clx-w-" + strings.Repeat("a", 90) + "-----" + strings.Repeat("b", 94) + "-ivc4en",
		// The cut splits a surrogate pair.
		"/tmp/clx/w/" + strings.Repeat("c", 187) + "/😀z": "-tmp-clx-w-" + strings.Repeat("c", 187) + "---ewgm5o",
	} {
		if got := ProjectDirName(cwd); got != want {
			t.Errorf("ProjectDirName(%q) =\n %q, want\n %q", cwd, got, want)
		}
	}
	// Exactly 200 units is not cut.
	if got := ProjectDirName("/" + strings.Repeat("a", 199)); len(got) != 200 {
		t.Errorf("a 200-unit name was changed: %q", got)
	}
}

// mkfile writes a file with content and the modification time mod.
func mkfile(t *testing.T, path, content string, mod time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// realTempDir is t.TempDir with symbolic links resolved.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// realAndLink makes a folder and a symbolic link to it.
func realAndLink(t *testing.T) (real, link string) {
	t.Helper()
	tmp := realTempDir(t)
	real, link = filepath.Join(tmp, "real"), filepath.Join(tmp, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	return real, link
}

func TestProjectDirs(t *testing.T) {
	cfg := t.TempDir()
	real, link := realAndLink(t)
	projects := filepath.Join(cfg, "projects")
	for _, c := range []struct {
		cwd  string
		want []string
	}{
		{real, []string{filepath.Join(projects, ProjectDirName(real))}},
		{link, []string{filepath.Join(projects, ProjectDirName(link)), filepath.Join(projects, ProjectDirName(real))}},
		{"/does/not/exist", []string{filepath.Join(projects, "-does-not-exist")}},
	} {
		if got := ProjectDirs(cfg, c.cwd); !slices.Equal(got, c.want) {
			t.Errorf("ProjectDirs(%q) = %q, want %q", c.cwd, got, c.want)
		}
	}
	// A link whose target has the same folder name: one folder.
	tmp := filepath.Dir(real)
	if err := os.Mkdir(filepath.Join(tmp, "a-b"), 0o755); err != nil {
		t.Fatal(err)
	}
	same := filepath.Join(tmp, "a.b")
	if err := os.Symlink(filepath.Join(tmp, "a-b"), same); err != nil {
		t.Fatal(err)
	}
	if got := ProjectDirs(cfg, same); len(got) != 1 {
		t.Errorf("ProjectDirs(%q) = %q, want one folder", same, got)
	}
}

func TestSessionFile(t *testing.T) {
	cfg := t.TempDir()
	real, link := realAndLink(t)
	now := time.Now()
	file := filepath.Join(ProjectDir(cfg, real), u("s1")+".jsonl")
	mkfile(t, file, "{}\n", now)
	if err := os.MkdirAll(filepath.Join(ProjectDir(cfg, real), u("dir")+".jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(ProjectDir(cfg, real), "notauuid.jsonl"), "{}\n", now)
	for _, c := range []struct{ cwd, id, want string }{
		{real, u("s1"), file},
		{link, u("s1"), file}, // found in the resolved cwd's folder
		{real, strings.ToUpper(u("s1")), ""},
		{real, u("s2"), ""},
		{real, u("dir"), ""}, // not a regular file
		{real, "notauuid", ""},
		{real, "../real/" + u("s1"), ""},
		{real, `a\b`, ""},
		{real, ".", ""},
		{real, "..", ""},
		{"/does/not/exist", u("s1"), ""},
	} {
		if got := SessionFile(cfg, c.cwd, c.id); got != c.want {
			t.Errorf("SessionFile(%q, %q) = %q, want %q", c.cwd, c.id, got, c.want)
		}
	}
}

// TestFind: one way to find a session file, with the reason when there is
// none.
func TestFind(t *testing.T) {
	cfg := t.TempDir()
	real, link := realAndLink(t)
	dir := ProjectDir(cfg, real)
	file := filepath.Join(dir, u("s1")+".jsonl")
	mkfile(t, file, "{}\n", time.Now())
	folder := filepath.Join(dir, u("dir")+".jsonl")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := Find(cfg, link, u("s1")); p != file || err != nil {
		t.Errorf("a file: %q, %v", p, err)
	}
	if p, err := Find(cfg, real, u("dir")); p != folder || !errors.Is(err, ErrNotRegular) {
		t.Errorf("a folder: %q, %v", p, err)
	}
	// Not found: the path where the CLI would write it (the first folder).
	if p, err := Find(cfg, link, u("s2")); p != filepath.Join(ProjectDir(cfg, link), u("s2")+".jsonl") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %q, %v", p, err)
	}
	for _, id := range []string{"", "s1", "../" + u("s1"), u("s1") + "/x", "..", "."} {
		if p, err := Find(cfg, real, id); p != "" || !errors.Is(err, ErrInvalidID) {
			t.Errorf("Find(%q) = %q, %v", id, p, err)
		}
	}
}

// u is a session id (a UUID) made from name.
func u(name string) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", crc32.ChecksumIEEE([]byte(name)), len(name))
}

// us is u of each name.
func us(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = u(n)
	}
	return out
}

// ids returns the ids of files, in order.
func ids(files []Session) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.ID)
	}
	return out
}

func TestList(t *testing.T) {
	cfg := t.TempDir()
	real, link := realAndLink(t)
	now := time.Now().Truncate(time.Second)
	dir := ProjectDir(cfg, real)
	mkfile(t, filepath.Join(dir, u("old")+".jsonl"), "{}\n", now.Add(-2*time.Hour))
	mkfile(t, filepath.Join(dir, u("new")+".jsonl"), "{}\n", now)
	mkfile(t, filepath.Join(dir, u("mid")+".jsonl"), "{}\n", now.Add(-time.Hour))
	mkfile(t, filepath.Join(dir, "notes.txt"), "x", now.Add(time.Hour))
	mkfile(t, filepath.Join(dir, "agent-1234.jsonl"), "{}\n", now.Add(time.Hour)) // not a session id
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(ProjectDir(cfg, link), u("linked")+".jsonl"), "{}\n", now.Add(-30*time.Minute))

	files, err := List(cfg, real)
	if err != nil || !slices.Equal(ids(files), us("new", "mid", "old")) {
		t.Fatalf("List(real) = %q, %v", ids(files), err)
	}
	if f := files[0]; f.Path != filepath.Join(dir, u("new")+".jsonl") || !f.ModTime.Equal(now) || f.Size != 3 {
		t.Errorf("first file: %+v", f)
	}
	files, err = List(cfg, link)
	if err != nil || !slices.Equal(ids(files), us("new", "linked", "mid", "old")) {
		t.Errorf("List(link) = %q, %v", ids(files), err)
	}
	files, err = List(cfg, "/does/not/exist")
	if err != nil || len(files) != 0 {
		t.Errorf("List(missing) = %q, %v", ids(files), err)
	}
	// A project folder that cannot be read (here a file) is an error.
	mkfile(t, ProjectDir(cfg, "/not/a/folder"), "x", now)
	if files, err := List(cfg, "/not/a/folder"); err == nil || errors.Is(err, fs.ErrNotExist) || len(files) != 0 {
		t.Errorf("List(unreadable) = %q, %v", ids(files), err)
	}
}

// TestListLongCwd: a cwd over 200 characters is found by the CLI's hash,
// not confused with another that shares the first 200.
func TestListLongCwd(t *testing.T) {
	cfg := t.TempDir()
	now := time.Now()
	long := "/work/" + strings.Repeat("x", 200) + "/😀one"
	other := "/work/" + strings.Repeat("x", 200) + "/two"
	if ProjectDirName(long)[:200] != ProjectDirName(other)[:200] {
		t.Fatal("the test needs two names with the same first 200 characters")
	}
	mkfile(t, filepath.Join(cfg, "projects", ProjectDirName(long), u("mine")+".jsonl"), "{}\n", now)
	mkfile(t, filepath.Join(cfg, "projects", ProjectDirName(other), u("theirs")+".jsonl"), "{}\n", now)
	files, err := List(cfg, long)
	if err != nil || !slices.Equal(ids(files), us("mine")) {
		t.Errorf("List(long) = %q, %v", ids(files), err)
	}
	if got := SessionFile(cfg, long, u("mine")); got != filepath.Join(cfg, "projects", ProjectDirName(long), u("mine")+".jsonl") {
		t.Errorf("SessionFile(long) = %q", got)
	}
	if got := SessionFile(cfg, long, u("theirs")); got != "" {
		t.Errorf("SessionFile(long) found the other cwd's session: %q", got)
	}
}

func TestListAll(t *testing.T) {
	cfg := t.TempDir()
	if files, err := ListAll(cfg); err != nil || len(files) != 0 {
		t.Fatalf("no projects folder: %q, %v", ids(files), err)
	}
	now := time.Now()
	mkfile(t, filepath.Join(cfg, "projects", "-a", u("a1")+".jsonl"), "{}\n", now.Add(-time.Hour))
	mkfile(t, filepath.Join(cfg, "projects", "-b", u("b1")+".jsonl"), "{}\n", now)
	mkfile(t, filepath.Join(cfg, "projects", "-b", u("b0")+".jsonl"), "{}\n", now.Add(-2*time.Hour))
	mkfile(t, filepath.Join(cfg, "projects", u("stray")+".jsonl"), "{}\n", now) // not in a project folder
	files, err := ListAll(cfg)
	if err != nil || !slices.Equal(ids(files), us("b1", "a1", "b0")) {
		t.Errorf("ListAll = %q, %v", ids(files), err)
	}
}

func TestEachLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	mkfile(t, path, "one\n\n"+strings.Repeat("x", 100)+"\r\ntwo\r\nthree\nfour", time.Now())
	var got []string
	if err := EachLine(path, 50, func(l []byte) bool { got = append(got, string(l)); return true }); err != nil {
		t.Fatal(err)
	}
	if want := []string{"one", "two", "three", "four"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	got = nil
	if err := EachLine(path, 0, func(l []byte) bool { got = append(got, string(l)); return len(got) < 2 }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != strings.Repeat("x", 100) {
		t.Errorf("stopped after %q", got)
	}
	if err := EachLine(filepath.Join(t.TempDir(), "missing"), 0, func([]byte) bool { return true }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestResumable(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		content string
		want    bool
	}{
		"user":      {`{"type":"queue-operation"}` + "\n" + `{"type":"user","message":{}}` + "\n", true},
		"assistant": {`{"type":"summary"}` + "\n" + `{"type":"assistant","message":{}}` + "\n", true},
		"none":      {`{"type":"queue-operation"}` + "\n" + `{"type":"last-prompt"}` + "\n", false},
		"empty":     {"", false},
		"not json":  {"user\nassistant\n", false},
	} {
		path := filepath.Join(dir, name+".jsonl")
		mkfile(t, path, c.content, time.Now())
		if got := Resumable(path); got != c.want {
			t.Errorf("%s: Resumable = %v, want %v", name, got, c.want)
		}
	}
	if Resumable(filepath.Join(dir, "missing.jsonl")) {
		t.Errorf("a missing file is resumable")
	}
}

func FuzzProjectDirName(f *testing.F) {
	f.Add("/home/user/project")
	f.Add("/x/😀" + strings.Repeat("é", 300))
	f.Fuzz(func(t *testing.T, cwd string) {
		name := ProjectDirName(cwd)
		if strings.TrimLeft(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" {
			t.Fatalf("ProjectDirName(%q) = %q: not only letters, digits and -", cwd, name)
		}
		if len(name) > maxProjectDirName+1+7 { // "-" and at most 7 base-36 digits of 2^31
			t.Fatalf("ProjectDirName(%q) is %d long", cwd, len(name))
		}
	})
}

// TestLines: every line until the context ends, then the context's error.
func TestLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := Lines(context.Background(), path, func(l []byte) { got = append(got, string(l)) }); err != nil || strings.Join(got, "") != "abc" {
		t.Fatalf("Lines: %q, %v", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	got = nil
	err := Lines(ctx, path, func(l []byte) { got = append(got, string(l)); cancel() })
	if !errors.Is(err, context.Canceled) || len(got) != 1 {
		t.Fatalf("Lines after a cancel: %q, %v; want one line and context.Canceled", got, err)
	}
}

// TestLinesRewound: Lines leaves out what a rewind dropped (the cut
// prompt, the entries after it up to the marker, the marker) and keeps
// what came before and after; a marker naming no prompt of the file
// drops nothing.
func TestLinesRewound(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	file := strings.Join([]string{
		`{"type":"user","uuid":"u1","message":{"role":"user","content":"one"}}`,
		`{"type":"assistant","uuid":"a1","message":{"id":"m1","content":[{"type":"text","text":"A1"}]}}`,
		`{"type":"queue-operation","operation":"enqueue"}`,
		`{"type":"user","uuid":"u2","message":{"role":"user","content":"two"}}`,
		`{"type":"assistant","uuid":"a2","message":{"id":"m2","content":[{"type":"text","text":"A2"}]}}`,
		`{"type":"last-prompt","lastPrompt":"two","leafUuid":"a1","explicit":true,"rewound":true,"cutUuid":"u2"}`,
		`{"type":"last-prompt","lastPrompt":"x","rewound":true,"cutUuid":"nobody"}`,
		`{"type":"user","uuid":"u3","parentUuid":"a1","message":{"role":"user","content":"three"}}`,
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := Lines(context.Background(), path, func(l []byte) {
		if id := gjson.GetBytes(l, "uuid").Str; id != "" {
			got = append(got, id)
		} else {
			got = append(got, gjson.GetBytes(l, "type").Str)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if want := "u1 a1 queue-operation u3"; strings.Join(got, " ") != want {
		t.Errorf("Lines gave %q, want %q", strings.Join(got, " "), want)
	}
	s, err := Summarize(context.Background(), path)
	if err != nil || s.Messages != 3 || s.LastPrompt != "three" {
		t.Errorf("Summarize = %+v, %v; want 3 messages, last prompt three", s, err)
	}
}
