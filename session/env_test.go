//go:build unix

package session

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestInherit(t *testing.T) {
	env := []string{"A=1", "HTTPS_PROXY=http://x", "B=2=3", "https_proxy=y", "C"}
	drop := func(name string) bool { return name == "HTTPS_PROXY" || name == "https_proxy" || name == "C" }
	if got := inherit(env, drop); !slices.Equal(got, []string{"A=1", "B=2=3"}) {
		t.Errorf("inherit = %q", got)
	}
	if env[1] != "HTTPS_PROXY=http://x" {
		t.Errorf("inherit changed its input: %q", env)
	}
	if got := inherit(env, nil); !slices.Equal(got, env) {
		t.Errorf("inherit(nil) = %q", got)
	}
}

// DropEnv leaves inherited variables out of the child's environment, but
// never an entry of Env.
func TestDropEnv(t *testing.T) {
	t.Parallel()
	if os.Getenv("HOME") == "" || os.Getenv("PATH") == "" {
		t.Skip("needs HOME and PATH in the environment")
	}
	cfg := fakeConfig("env", "HOME", "PATH", "CCB_KEPT")
	cfg.Env = append(cfg.Env, "CCB_KEPT=ours")
	cfg.DropEnv = func(name string) bool { return name == "HOME" || name == "CCB_KEPT" }
	c := start(t, cfg)
	out := readLines(c.Stdout())
	out.next(t) // the working directory
	out.expect(t, "HOME=")
	out.expect(t, "PATH="+os.Getenv("PATH"))
	out.expect(t, "CCB_KEPT=ours")
	waitDone(t, c, 10*time.Second)
}
