//go:build !linux

package guardian

import (
	"fmt"
	"os"
)

// Run is never started here (session.Guarded returns nil); it refuses.
func Run([]string) int {
	fmt.Fprintln(os.Stderr, "ccbridge guardian: not supported on this system")
	return 2
}
