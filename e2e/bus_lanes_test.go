package e2e

// Lanes 000 and 001 on the bus (docs/protocol/bus.md, "Lanes 000 and
// 001"): a real worker `ccbridge --ui control --bus` with the real CLI,
// one NATS server in this process, driven through NATS by a client as a
// team's controller would be: requests on ccbridge.ctl.TEAM.AGENT, lane
// 001's events on ccbridge.ctl.TEAM.AGENT.ev. The worker is killed and
// started again on the same session: its request ids and its pause were
// kept on the bus. Then the permissions of docs/protocol/bus.md confine a
// team's user to its team's subjects, on a server that checks them.

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// busCtl sends a line on subject and returns the first line answering
// it (lane 000's ack).
func busCtl(t *testing.T, nc *nats.Conn, subject string, line string) []byte {
	t.Helper()
	m, err := nc.Request(subject, []byte(line), 20*time.Second)
	if err != nil {
		t.Fatalf("a request on %s: %v", subject, err)
	}
	return m.Data
}

// busL001 sends a lane-001 REQUEST on subject and returns its ACK and
// RESULT, the two lines that answer it, in that order.
func busL001(t *testing.T, nc *nats.Conn, subject, req string) (ack, result []byte) {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, []byte(req)); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for len(got) < 2 {
		m, err := sub.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("the answers to %.100s: %v (got %q)", req, err, got)
		}
		got = append(got, m.Data)
	}
	if typeOf(got[0]) != "ACK" || typeOf(got[1]) != "RESULT" {
		t.Fatalf("the answers to %.100s, want ACK then RESULT: %s / %s", req, got[0], got[1])
	}
	return got[0], got[1]
}

// busNext returns the next message on sub for which pred holds.
func busNext(t *testing.T, sub *nats.Subscription, what string, pred func([]byte) bool) []byte {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("%s on %s: %v", what, sub.Subject, err)
		}
		if pred(m.Data) {
			return m.Data
		}
	}
}

// busStartServer starts one NATS server with JetStream (opts, when not
// nil, from a configuration file) and returns its URL.
func busStartServer(t *testing.T, opts *server.Options) string {
	t.Helper()
	if opts == nil {
		opts = &server.Options{}
	}
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	opts.JetStream, opts.StoreDir = true, t.TempDir()
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		t.Fatal("the NATS server did not start")
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns.ClientURL()
}

func TestBusLanes000And001(t *testing.T) {
	t.Parallel()
	url := busStartServer(t, nil)
	const wid = "bus-lanes"
	busArgs := []string{"--bus", url, "--worker-id", wid, "--", "--allowedTools", "Bash"}
	w1 := ctlStart(t, ctlOpts{durable: true, args: busArgs})
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	subj := "ccbridge.ctl." + ctlTeam + "." + ctlAgent
	events, err := nc.SubscribeSync(subj + ".ev")
	if err != nil {
		t.Fatal(err)
	}

	// Lane 000 on the bus: a prompt taken once, its retries duplicates,
	// on the bus and on stdio alike.
	tok1 := token("BUSFIRST")
	m1 := w1.stdinReq(ctlID("bus-p1"), "hello "+tok1)
	busEventually(t, 20*time.Second, "the worker on "+subj, func() string {
		if _, err := nc.Request(subj, []byte(`{"type":"control.capabilities.request","v":1,"request_id":"caps"}`), time.Second); err != nil {
			return err.Error()
		}
		return ""
	})
	// A second worker of this team and agent (another worker id) would
	// take the same subject's requests: refused at start, before a CLI,
	// once the first's presence has not lapsed (some 8 s; it runs beside
	// the checks below).
	twin := startBridge(t, []string{"--ui", "control", "--team", ctlTeam, "--agent-id", ctlAgent, "--bus", url, "--worker-id", "bus-lanes-twin"})
	ctlAck(t, busCtl(t, nc, subj, m1.String()), m1, "ok", false)
	w1.turn(m1.id(), "success")
	ctlAck(t, busCtl(t, nc, subj, m1.String()), m1, "ok", true)
	ctlAck(t, w1.stdio.request(m1.String()), m1, "ok", true)
	// A request of another team on this worker's subject: refused, as on
	// stdio (the subject confines senders with permissions; the lane
	// still checks the team).
	other := m1.with("request_id", ctlID("bus-other"), "team", "team-other")
	if a := busCtl(t, nc, subj, other.String()); get(a, "result").Str != "rejected" {
		t.Errorf("a request of another team: %s", a)
	}

	// A request id a killed process left in flight on the bus (its claim
	// is all there is): whether it reached the worker is not known, so it
	// counts as done, and is not run.
	left := w1.stdinReq(ctlID("bus-left"), "hello, left in flight")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), "ccbridge_dedupe")
	if err != nil {
		t.Fatal(err)
	}
	key := wid
	for _, f := range []string{"000", ctlTeam, w1.sid, ctlAgent, left.id()} {
		key += "._" + base64.RawURLEncoding.EncodeToString([]byte(f))
	}
	if _, err := kv.Create(context.Background(), key, []byte("\x00a-process-gone")); err != nil {
		t.Fatal(err)
	}
	if d := ctlAck(t, busCtl(t, nc, subj, left.String()), left, "ok", true); !strings.Contains(d, "internal_error (in flight when ccbridge stopped; outcome unknown)") {
		t.Errorf("a request left in flight: %q", d)
	}

	// Lane 001 on the bus: pause, its ACK and RESULT to the reply
	// subject, its STATE on the events' subject.
	_, pause := busL001(t, nc, subj, l1Req("bus-pause", "pause", w1.sid, "", nil))
	l1Status(t, "pause", pause, "success", "")
	busNext(t, events, "a STATE paused", func(b []byte) bool {
		return get(b, "event").Str == "STATE" && get(b, "stack.0.state").Str == "paused"
	})

	if code := twin.wait(); code != 2 || !strings.Contains(twin.stderr.String(), `a worker of team "`+ctlTeam+`" and agent "`+ctlAgent+`" is already on the bus`) {
		t.Errorf("a second worker of one team and agent: code %d:\n%s", code, tail(twin.stderr.String(), 1000))
	}

	// Killed, and started again on the same session with the same
	// worker id (once its presence lapsed): the bus kept both lanes.
	w1.b.cmd.Process.Signal(syscall.SIGKILL)
	w1.b.wait()
	w2 := ctlStart(t, ctlOpts{durable: true, sid: w1.sid, resume: true,
		args: append([]string{"--cwd", w1.b.dir}, busArgs...), env: []string{"HOME=" + w1.b.home}})
	l := w2.stdio
	if st := l.wait("the first STATE", l1IsEvent("STATE")); get(st, "stack.0.state").Str != "paused" {
		t.Fatalf("the first STATE after the restart: %s", st)
	}
	ctlAck(t, busCtl(t, nc, subj, m1.String()), m1, "ok", true)
	ctlAck(t, l.request(m1.String()), m1, "ok", true)
	_, again := busL001(t, nc, subj, l1Req("bus-pause", "pause", w1.sid, "", nil))
	if get(again, "payload").Raw != get(pause, "payload").Raw {
		t.Errorf("the pause's retry after the restart: %s, want the first RESULT's payload %s", again, get(pause, "payload").Raw)
	}
	// The run is paused: a prompt waits until resume (the held prompt's
	// timing is TestLane001PausePersisted's; here: nothing ran before the
	// resume, and its STATE running follows it).
	tok2 := token("BUSSTEPS")
	m2 := w2.stdinReq(ctlID("bus-p2"), "TOOLSTEPS "+tok2)
	ctlAck(t, busCtl(t, nc, subj, m2.String()), m2, "ok", false)
	for {
		m, err := events.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		if get(m.Data, "stack.0.state").Str == "running" {
			t.Errorf("the paused run ran before the resume: %s", m.Data)
		}
	}
	if n := l1Requests(t, tok2); n != 0 || count(l.got, func(b []byte) bool { return typeOf(b) == "control.worker.tool" }) != 0 {
		t.Errorf("the paused run sent the prompt to the model: %d requests", n)
	}
	_, res := busL001(t, nc, subj, l1Req("bus-resume", "resume", w1.sid, "", nil))
	l1Status(t, "resume", res, "success", "")
	if st := busNext(t, events, "a STATE", l1IsEvent("STATE")); get(st, "stack.0.state").Str != "running" {
		t.Errorf("the STATE after the resume: %s", st)
	}
	w2.turn(m2.id(), "success")
	if n := count(append(w1.stdio.got, l.got...), func(b []byte) bool { return strings.Contains(string(b), left.id()) }); n != 0 {
		t.Errorf("the request left in flight ran: %d lines name it", n)
	}
	if !seenByModel(t, tok2, tok1) {
		t.Errorf("the restarted worker did not resume the session")
	}

	// ccbridge serve --bus with a worker of its own: its worker on the
	// bus too, served beside the other, by it and by any gateway.
	sv := svStart(t, svOpts{workers: []string{"bus-served"}, external: true, args: []string{"--bus", url}})
	for _, id := range []string{"bus-served", wid} {
		if code, r := busPost(sv, id, ctlID("served-"+id), "thread/list", nil); code != 200 || l4Seq(r) == 0 {
			t.Errorf("thread/list of %s through serve --bus --worker: HTTP %d: %s", id, code, r)
		}
	}
	busEventually(t, 10*time.Second, "both workers in GET …/workers", func() string {
		if _, _, list := sv.do("GET", "", "", nil); !strings.Contains(string(list), `"bus-served"`) || !strings.Contains(string(list), `"`+wid+`"`) {
			return string(list)
		}
		return ""
	})
	st, err := nc.Request("ccbridge.status.bus-served", nil, 5*time.Second)
	if err != nil || get(st.Data, "state").Str == "" {
		t.Errorf("serve's worker's status on the bus: %v %s", err, st.Data)
	}
}

// TestBusTeamPermissions: the permissions docs/protocol/bus.md gives a
// worker, a gateway and a team's controller, on a server that checks
// them: the worker and a gateway do their work with no more, a team's
// controller drives its team's worker and another team's cannot; and a
// worker given a wrong password stops at start with a clear error.
func TestBusTeamPermissions(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(busPermsConf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	url := busStartServer(t, opts)
	as := func(user string) string { return strings.Replace(url, "nats://", "nats://"+user+":"+user+"-pw@", 1) }

	// Wrong credentials: code 2 and why, at once.
	b := startBridge(t, []string{"--ui", "control", "--team", ctlTeam, "--agent-id", ctlAgent, "--bus", strings.Replace(url, "nats://", "nats://worker:wrong@", 1), "--worker-id", "perm-w"})
	start := time.Now()
	if code := b.wait(); code != 2 || !strings.Contains(strings.ToLower(b.stderr.String()), "authorization violation") || time.Since(start) > 10*time.Second {
		t.Errorf("a worker with a wrong password: code %d after %v:\n%s", code, time.Since(start), tail(b.stderr.String(), 1000))
	}

	if strings.Contains(b.stderr.String(), "wrong") {
		t.Errorf("the password is in the worker's log:\n%s", b.stderr.String())
	}
	// A worker id its user may not write: refused at start, and why.
	b = startBridge(t, []string{"--ui", "control", "--team", ctlTeam, "--agent-id", ctlAgent, "--bus", as("worker"), "--worker-id", "perm-x"})
	start = time.Now()
	if code := b.wait(); code != 2 || !regexp.MustCompile(`stream: .*the bus refused: nats: permissions violation: Permissions Violation for Publish to "\$JS\.API\.STREAM\.[A-Z]+\.ccbridge_ev_perm-x"`).MatchString(b.stderr.String()) || time.Since(start) > 10*time.Second {
		t.Errorf("a worker whose user may not write its stream: code %d after %v:\n%s", code, time.Since(start), tail(b.stderr.String(), 1000))
	}

	w := ctlStart(t, ctlOpts{durable: true, args: []string{"--bus", as("worker"), "--worker-id", "perm-w"}})
	subj := "ccbridge.ctl." + ctlTeam + "." + ctlAgent
	connect := func(user string) (*nats.Conn, chan error) {
		errs := make(chan error, 16)
		nc, err := nats.Connect(as(user), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc, errs
	}
	// The team's controller: its requests are answered, lane 001's too,
	// and it hears the run's events.
	mine, _ := connect("team-e2e")
	events, err := mine.SubscribeSync(subj + ".ev")
	if err != nil {
		t.Fatal(err)
	}
	m := w.stdinReq(ctlID("perm-1"), "hello from the team")
	busEventually(t, 20*time.Second, "the worker on "+subj, func() string {
		a, err := mine.Request(subj, []byte(m.String()), time.Second)
		if err != nil {
			return err.Error()
		}
		if get(a.Data, "result").Str != "ok" {
			return string(a.Data)
		}
		return ""
	})
	w.turn(m.id(), "success")
	_, res := busL001(t, mine, subj, l1Req("perm-pause", "pause", w.sid, "", nil))
	l1Status(t, "pause", res, "success", "")
	busNext(t, events, "a STATE paused", func(b []byte) bool { return get(b, "stack.0.state").Str == "paused" })
	// A gateway: lane 004 through it, and the worker in its list.
	g := svStart(t, svOpts{external: true, args: []string{"--bus", as("gateway")}})
	if code, r := busPost(g, "perm-w", ctlID("perm-list"), "thread/list", nil); code != 200 {
		t.Errorf("thread/list through a gateway: HTTP %d: %s", code, r)
	}
	if _, _, list := g.do("GET", "", "", nil); !strings.Contains(string(list), `"perm-w"`) {
		t.Errorf("GET …/workers: %s", list)
	}
	if strings.Contains(g.stderr.String(), "gateway-pw") || strings.Contains(w.b.stderr.String(), "worker-pw") {
		t.Errorf("a password in a log:\n%s\n%s", g.stderr.String(), w.b.stderr.String())
	}
	// Another team's controller may neither send to this team's worker
	// nor listen to its events; the worker never sees its request.
	theirs, errs := connect("team-other")
	intruder := w.stdinReq(ctlID("perm-2"), "hello from another team")
	if _, err := theirs.Request(subj, []byte(intruder.String()), 2*time.Second); err == nil {
		t.Errorf("another team's user got an answer on %s", subj)
	}
	theirs.SubscribeSync(subj + ".ev")
	theirs.Flush()
	var violations []string
	for deadline := time.After(5 * time.Second); len(violations) < 2; {
		select {
		case err := <-errs:
			violations = append(violations, err.Error())
		case <-deadline:
			t.Fatalf("another team's user: permission violations %q, want one to publish and one to subscribe", violations)
		}
	}
	all := strings.ToLower(strings.Join(violations, "\n"))
	for _, want := range []string{`publish to "` + subj + `"`, `subscription to "` + subj + `.ev"`} {
		if !strings.Contains(all, "permissions violation for "+want) {
			t.Errorf("no permissions violation for %s: %q", want, violations)
		}
	}
	if n := count(w.stdio.got, func(l []byte) bool { return strings.Contains(string(l), intruder.id()) }); n != 0 {
		t.Errorf("the worker saw another team's request: %d lines", n)
	}
}

// busPermsConf gives the users of docs/protocol/bus.md ("Permissions")
// their permissions as written there, for worker perm-w of team team-e2e
// and agent agent-e2e: keep the two in step.
const busPermsConf = `
authorization {
  users = [
    { user: worker, password: worker-pw, permissions: {
        publish: [ "ccbridge.ev.perm-w.>", "$KV.ccbridge_receipts.perm-w.>", "$KV.ccbridge_presence.perm-w", "$KV.ccbridge_presence.ctl.>",
                   "$KV.ccbridge_dedupe.perm-w.>", "$KV.ccbridge_runs.>", "ccbridge.ctl.team-e2e.agent-e2e.ev",
                   "$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.>",
                   "$JS.API.STREAM.CREATE.ccbridge_ev_perm-w", "$JS.API.STREAM.UPDATE.ccbridge_ev_perm-w",
                   "$JS.API.STREAM.MSG.GET.ccbridge_ev_perm-w",
                   "$JS.API.STREAM.CREATE.KV_ccbridge_receipts", "$JS.API.STREAM.CREATE.KV_ccbridge_presence",
                   "$JS.API.STREAM.CREATE.KV_ccbridge_dedupe", "$JS.API.STREAM.CREATE.KV_ccbridge_runs" ]
        subscribe: [ "ccbridge.req.perm-w", "ccbridge.status.perm-w", "ccbridge.ctl.team-e2e.agent-e2e", "_INBOX.>" ]
        allow_responses: { max: 2 } } }
    { user: gateway, password: gateway-pw, permissions: {
        publish: [ "ccbridge.req.*", "ccbridge.status.*",
                   "$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.>",
                   "$JS.API.STREAM.MSG.GET.*",
                   "$JS.API.STREAM.CREATE.KV_ccbridge_receipts", "$JS.API.STREAM.CREATE.KV_ccbridge_presence" ]
        subscribe: [ "_INBOX.>", "$KV.ccbridge_presence.>" ] } }
    { user: team-e2e, password: team-e2e-pw, permissions: {
        publish: [ "ccbridge.ctl.team-e2e.*" ]
        subscribe: [ "ccbridge.ctl.team-e2e.*.ev", "_INBOX.>" ] } }
    { user: team-other, password: team-other-pw, permissions: {
        publish: [ "ccbridge.ctl.team-other.*" ]
        subscribe: [ "ccbridge.ctl.team-other.*.ev", "_INBOX.>" ] } }
  ]
}
`
