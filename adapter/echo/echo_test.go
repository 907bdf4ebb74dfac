// Package echo_test is a dialect made for a test: the smallest thing that
// runs on the session core, to show what adding a dialect takes (one
// directory, one Register line) and to run the real loop and supervisor
// with a real child. Its "CLI" is cat: every UI line goes to the child
// and comes back to the UI as {"echo":LINE,"gen":N}; "restart" replaces
// the child, as a dialect's session command would.
package echo_test

import (
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/framing"
	"github.com/ccbridge/ccbridge/session"
)

func init() { adapter.Register("echo", func() adapter.Dialect { return &echo{} }) }

type echo struct {
	cfg   adapter.DialectConfig
	loop  *adapter.Loop
	sup   *adapter.Supervisor
	upper bool
}

func (d *echo) Flags(fs *flag.FlagSet) { fs.BoolVar(&d.upper, "upper", false, "echo in capitals") }

func (d *echo) Configure(c adapter.DialectConfig) error {
	d.cfg = c
	return nil
}

func (d *echo) Run(ctx context.Context, in io.Reader, out io.Writer, signals <-chan os.Signal) (int, error) {
	d.loop = adapter.NewLoop(adapter.LoopConfig{MaxLine: d.cfg.MaxLine, Logger: d.cfg.Logger})
	d.sup = d.loop.NewSupervisor(adapter.SupervisorConfig{Child: d.cfg.Child})
	if _, err := d.sup.Start(d.cfg.Options, false); err != nil {
		return 1, err
	}
	return d.loop.Run(ctx, d, in, out, signals)
}

func (d *echo) UILine(line []byte) {
	if string(line) == "restart" {
		d.sup.Retire("restart", time.Second, false)
		d.sup.Respawn(d.sup.Opts, false)
		return
	}
	d.sup.WhenLive(func(err error) {
		if err != nil {
			d.emit(`{"error":` + strconv.Quote(err.Error()) + `}`)
			return
		}
		d.sup.Live().Write(line)
	})
}

func (d *echo) CLILine(p *adapter.Proc, line string) {
	if d.upper {
		line = strings.ToUpper(line)
	}
	d.emit(`{"echo":` + strconv.Quote(line) + `,"gen":` + strconv.Itoa(p.Gen) + `}`)
}

func (d *echo) ChildExited(_ *adapter.Proc, exit session.Exit) {
	d.emit(`{"exited":` + strconv.Itoa(exit.Code) + `}`)
}

func (d *echo) UIEnd() {
	if p := d.sup.Live(); p != nil {
		p.CloseStdin()
	}
}

func (d *echo) UITooLong(e *framing.LineTooLongError)               { d.emit(`{"error":"line_too_long"}`) }
func (d *echo) CLITooLong(*adapter.Proc, *framing.LineTooLongError) {}
func (d *echo) Interrupt()                                          { d.emit(`{"interrupted":true}`) }
func (d *echo) Shutdown(string)                                     {}
func (d *echo) Expire(time.Time)                                    {}
func (d *echo) NextDeadline() time.Time                             { return time.Time{} }

func (d *echo) emit(s string) { d.loop.Emit([]byte(s)) }

// TestEchoDialect runs the echo dialect as main would: found by name, its
// own flag parsed, then lines through the loop to a real child and back,
// with a restart of the child between them.
func TestEchoDialect(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat on PATH")
	}
	d, ok := adapter.NewDialect("echo")
	if !ok {
		t.Fatal("the echo dialect is not registered")
	}
	fs := flag.NewFlagSet("ccbridge", flag.ContinueOnError)
	d.Flags(fs)
	if err := fs.Parse([]string{"--upper"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Configure(adapter.DialectConfig{Settings: adapter.Settings{
		Child: session.Config{Path: cat, Grace: time.Second}, MaxLine: 64}}); err != nil {
		t.Fatal(err)
	}
	// The UI's lines arrive one at a time, each after the answer to the
	// one before, as a UI would send them.
	uiR, uiW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := d.Run(context.Background(), uiR, outW, nil)
		outW.Close()
		done <- err
	}()
	lines := framing.NewReader(outR, 1<<20)
	send := func(s string) {
		if _, err := io.WriteString(uiW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() string {
		line, err := lines.ReadLine()
		if err != nil {
			t.Fatalf("reading the output: %v", err)
		}
		return string(line)
	}
	send("hello")
	first := next()
	if gjson.Get(first, "echo").Str != "HELLO" {
		t.Fatalf("got %s, want the line echoed in capitals", first)
	}
	send(strings.Repeat("x", 100)) // over MaxLine
	if got := next(); got != `{"error":"line_too_long"}` {
		t.Fatalf("got %s, want line_too_long", got)
	}
	send("restart")
	send("again")
	second := next()
	if gjson.Get(second, "echo").Str != "AGAIN" || gjson.Get(second, "gen").Int() <= gjson.Get(first, "gen").Int() {
		t.Fatalf("after the restart got %s, want the echo from a newer child than %s", second, first)
	}
	uiW.Close()
	rest, _ := io.ReadAll(outR)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// cat ends when its input does: the UI hears of it.
	if string(rest) != `{"exited":0}`+"\n" {
		t.Errorf("after the end of input got %q, want the child's exit", rest)
	}
}
