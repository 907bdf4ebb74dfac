package adapter

import "github.com/ccbridge/ccbridge/session"

// The stream dialect is drop-in mode with ccbridge's own CLI arguments
// (StreamArgs, then the session flags, then the extra arguments), or, in
// drop-in mode, with the host's arguments as they are. It relays bytes
// and does not run on the session core's loop: it parses no line it need
// not, so that it stays as fast as a plain relay (docs/design.md).
func init() {
	Register("stream", func() Dialect {
		return DialectFunc(func(c DialectConfig) (Runner, error) {
			child := c.Child
			child.Args = c.DropInArgs
			if child.Args == nil {
				var err error
				if child.Args, err = session.BuildArgs(StreamArgs, c.Options); err != nil {
					return nil, err
				}
			}
			return &DropIn{Child: child, MaxLine: c.MaxLine, Logger: c.Logger}, nil
		})
	})
}
