package stream

import (
	"context"
	"flag"
	"io"
	"os"

	"github.com/ccbridge/ccbridge/adapter"
	"github.com/ccbridge/ccbridge/session"
)

func init() { adapter.Register("stream", func() adapter.Dialect { return &stream{} }) }

// stream is drop-in mode with ccbridge's own CLI arguments (Args,
// then the session flags, then the extra arguments), or, in drop-in mode,
// with the host's arguments as they are. It relays bytes and does not run
// on the session core's loop: it parses no line it need not, so that it
// stays as fast as a plain relay (docs/design.md).
type stream struct{ d DropIn }

func (*stream) Flags(*flag.FlagSet) {}

func (s *stream) Configure(c adapter.DialectConfig) error {
	child := c.Child
	child.Args = c.DropInArgs
	if child.Args == nil {
		var err error
		if child.Args, err = session.BuildArgs(Args, c.Options); err != nil {
			return err
		}
	}
	s.d = DropIn{Child: child, MaxLine: c.MaxLine, Logger: c.Logger, StartControl: c.Settings.StartControl}
	return nil
}

func (s *stream) Run(ctx context.Context, in io.Reader, out io.Writer, signals <-chan os.Signal) (int, error) {
	return s.d.Run(ctx, in, out, signals)
}
