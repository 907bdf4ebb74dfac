package serve

import (
	"io"
	"strings"
	"testing"
)

// The gateway itself runs end to end against real NATS servers
// (e2e/bus_test.go); here, its flags.
func TestServeConfigBus(t *testing.T) {
	dir := t.TempDir()
	getenv := func(string) string { return "" }
	anyIDs := writeTokenFile(t, 0o600, "tok\ntok2 desk-1,desk_2\n")
	dotted := writeTokenFile(t, 0o600, "tok a.b\n")
	for _, c := range []struct {
		args []string
		bad  string // what the error names; "" for none
	}{
		{[]string{"--bus", "nats://127.0.0.1:4222"}, ""},
		{[]string{"--bus", "nats://a:4222,nats://b:4222", "--bus-replicas", "3", "--token-file", anyIDs}, ""},
		{[]string{"--bus", "nats://a:4222", "--token-file", dotted}, `no worker "a.b"`},
		{[]string{"--bus", "nats://a:4222", "--worker", "a=" + dir}, ""},
		{[]string{"--bus", "nats://a:4222", "--worker", "a.b=" + dir}, "1 to 64 of"},
		{[]string{"--bus", "nats://a:4222", "--worker", "a=" + dir, "--worker", "a=" + dir}, "twice"},
		{[]string{"--bus", "nats://a:4222", "--dir", dir}, "web UI"},
		{[]string{"--bus", "nats://a:4222", "--state-dir", dir}, "keeps no state"},
		{[]string{"--bus", "nats://a:4222", "--listen", "0.0.0.0:8787"}, "not a loopback"},
		{[]string{"--bus-creds", "x.creds", "--worker", "a=" + dir}, "go with --bus"},
		{[]string{"--bus", "nats://a:4222", "--bus-cert", "c.pem"}, "--bus-key"},
	} {
		cfg, err := parseServe(c.args, getenv, io.Discard)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.bad == "" && cfg.web:
			t.Errorf("%q: a gateway serves the web UI", c.args)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%q: err %v, want one naming %q", c.args, err, c.bad)
		}
	}
}
