package e2e

// Lane 004 on the bus end to end (docs/protocol/bus.md): real NATS
// servers in this process (nats-server, JetStream on, a three-node
// cluster with every stream and bucket replicated three times, and a
// leaf node), a real `ccbridge --ui control --bus` worker with the real
// CLI behind it (restarted once, behind the leaf node), and
// two `ccbridge serve --bus` gateways in front, driven over HTTP with the
// serve helpers (sv…). One worker serves every check, and is restarted
// once. Helpers of this file start with bus.

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tidwall/gjson"
)

// busNode is one NATS server of the cluster, restartable on its ports
// and store.
type busNode struct {
	opts *server.Options
	srv  *server.Server
}

// busCluster is n JetStream servers in a cluster, on 127.0.0.1.
type busCluster struct {
	t     *testing.T
	nodes []*busNode
}

// busFreePort is a port nothing listens on now.
func busFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// busStartCluster starts n servers and waits until JetStream answers.
func busStartCluster(t *testing.T, n int) *busCluster {
	t.Helper()
	c := &busCluster{t: t}
	var routes []string
	ports := make([][3]int, n)
	for i := range ports {
		ports[i] = [3]int{busFreePort(t), busFreePort(t), busFreePort(t)}
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i][1]))
	}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: ports[i][0],
			JetStream: true, JetStreamDomain: "hub", StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster:  server.ClusterOpts{Name: "ccbridge-e2e", Host: "127.0.0.1", Port: ports[i][1]},
			Routes:   server.RoutesFromStr(strings.Join(routes, ",")),
			LeafNode: server.LeafNodeOpts{Host: "127.0.0.1", Port: ports[i][2]},
		}
		c.nodes = append(c.nodes, &busNode{opts: o})
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.kill(i)
		}
	})
	c.ready(c.url(0))
	return c
}

func (c *busCluster) start(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	o := *nd.opts
	s, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		c.t.Fatalf("NATS server %d did not start", i)
	}
	nd.srv = s
}

func (c *busCluster) kill(i int) {
	if s := c.nodes[i].srv; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.nodes[i].srv = nil
	}
}

// leaf starts a leaf node without JetStream that dials out to every
// server of the cluster, as a desktop behind NAT would
// (docs/protocol/bus.md), and returns its URL.
func (c *busCluster) leaf() string {
	c.t.Helper()
	var hubs []*url.URL
	for _, nd := range c.nodes {
		hubs = append(hubs, &url.URL{Scheme: "nats-leaf", Host: fmt.Sprintf("127.0.0.1:%d", nd.opts.LeafNode.Port)})
	}
	s, err := server.NewServer(&server.Options{ServerName: "leaf", Host: "127.0.0.1", Port: busFreePort(c.t), NoLog: true, NoSigs: true,
		LeafNode: server.LeafNodeOpts{ReconnectInterval: 100 * time.Millisecond, Remotes: []*server.RemoteLeafOpts{{URLs: hubs}}}})
	if err != nil {
		c.t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		c.t.Fatal("the leaf node did not start")
	}
	c.t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}

func (c *busCluster) url(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.nodes[i].opts.Port)
}

func (c *busCluster) urls(is ...int) string {
	var u []string
	for _, i := range is {
		u = append(u, c.url(i))
	}
	return strings.Join(u, ",")
}

// ready waits until JetStream answers at url (a meta leader is elected).
func (c *busCluster) ready(url string) {
	c.t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		c.t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("JetStream did not answer at %s within 30 s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// busWorker is a worker on the bus: its process, and its stdio as a
// control lane (lane 000's identity is the ctl… one).
type busWorker struct {
	*bridge
	sid   string
	stdio *ctlLane
}

// busStartWorker runs `ccbridge --ui control --bus URLS` as worker id and
// waits until it serves lane 004 on the bus; its stdout is kept (the
// checks go through the gateways, and through its stdio where the bus is
// away).
func busStartWorker(t *testing.T, id, urls string, args ...string) *busWorker {
	t.Helper()
	w := &busWorker{sid: uuid.NewString()}
	w.bridge = startBridge(t, append([]string{"--ui", "control", "--worker-id", id, "--bus", urls, "--bus-replicas", "3",
		"--team", ctlTeam, "--agent-id", ctlAgent, "--allow-sender", ctlSender, "--session-id", w.sid}, args...), "CCBRIDGE_LOG_LEVEL=info")
	out := make(chan []byte, 1<<16)
	go func() {
		defer close(out)
		for l := range w.lines {
			out <- l
		}
	}()
	w.stdio = &ctlLane{t: t, name: "the worker's stdio", lines: out, write: func(s string) error {
		_, err := io.WriteString(w.stdin, s+"\n")
		return err
	}}
	w.waitStderr(`"bus: serving lane 004"`)
	return w
}

// busGateway runs `ccbridge serve --bus URLS`.
func busGateway(t *testing.T, urls string) *svServer {
	t.Helper()
	return svStart(t, svOpts{external: true, args: []string{"--bus", urls, "--bus-replicas", "3"}})
}

// busEventually retries f every 100 ms until it returns "" or d passes;
// then it fails with f's last word.
func busEventually(t *testing.T, d time.Duration, what string, f func() string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		if last = f(); last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, d, last)
		}
	}
}

// busPost posts a request line; it returns the HTTP status and body, or
// a status of 0 when the gateway could not be reached.
func busPost(s *svServer, worker, id, method string, params any) (int, []byte) {
	code, _, b, err := svDo(s.client, http.MethodPost, s.base+"/"+worker+"/requests", "", bytes.NewReader([]byte(l4Req(id, method, params))))
	if err != nil {
		return 0, []byte(err.Error())
	}
	return code, b
}

// busReplay reads the worker's stream from after through a gateway, up
// to seq to, as a client does: a stream that ends (the gateway's server
// electing a stream leader after a failure) is opened again after the
// last seq read.
func busReplay(t *testing.T, s *svServer, worker string, after, to uint64) [][]byte {
	t.Helper()
	var got [][]byte
	cursor := after
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		busEventually(t, 30*time.Second, "the gateway's status of "+worker, func() string {
			code, _, b, err := svDo(s.client, http.MethodGet, s.base+"/"+worker, "", nil)
			if err != nil || code != http.StatusOK {
				return fmt.Sprintf("HTTP %d %v: %.300s", code, err, b)
			}
			return ""
		})
		c := s.stream(worker, "", "?after="+strconv.FormatUint(cursor, 10))
		for ended := false; !ended; {
			select {
			case l, ok := <-c.lines:
				if !ok {
					ended = true
					break
				}
				got = append(got, l)
				if seq := l4Seq(l); seq > 0 {
					cursor = seq
				}
				if cursor >= to {
					c.hangUp()
					return got
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the stream of %s after %d: nothing for 30 s; the last lines:\n%s", worker, cursor, lastLines(got, 8))
			}
		}
		c.hangUp()
	}
	t.Fatalf("the stream of %s: not up to seq %d within 60 s; the last lines:\n%s", worker, to, lastLines(got, 8))
	return nil
}

// busOnce checks that the stream holds exactly one receipt for each id.
func busOnce(t *testing.T, what string, lines [][]byte, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if n := count(lines, l4IsReceipt(id)); n != 1 {
			t.Errorf("%s: %d receipts of %s in the stream, want 1", what, n, id)
		}
	}
}

func TestBusLane004(t *testing.T) {
	t.Parallel()
	top := t
	cl := busStartCluster(t, 3)
	const wid = "bus-w1"
	// The worker on nodes 1 and 2, gateway 1 on node 0 only, gateway 2 on
	// nodes 1 and 2: node 0 can fail under gateway 1 alone.
	w := busStartWorker(t, wid, cl.urls(1, 2), "--retain-events", "60")
	g1 := busGateway(t, cl.url(0))
	g2 := busGateway(t, cl.urls(1, 2))

	receipts := map[string][]byte{} // every receipt an HTTP answer gave, by request id
	call := func(g *svServer, id, method string, params any, want int) []byte {
		t.Helper()
		code, b := busPost(g, wid, id, method, params)
		if code != want {
			t.Fatalf("POST %s (%s): HTTP %d, want %d: %.600s", method, id, code, want, b)
		}
		if prev, ok := receipts[id]; ok && !bytes.Equal(prev, b) {
			t.Fatalf("%s: a retry's receipt differs:\n%s\n%s", id, prev, b)
		}
		receipts[id] = b
		return b
	}

	t.Run("presence", func(t *testing.T) {
		busEventually(t, 20*time.Second, "the worker in GET …/workers", func() string {
			_, _, b := g1.do(http.MethodGet, "", "", nil)
			if !gjson.GetBytes(b, `workers.#(worker_id=="`+wid+`")`).Exists() {
				return string(b)
			}
			return ""
		})
		st := g2.status(wid)
		if st.Get("status.state").Str == "" || st.Get("status.state").Str == "unreachable" {
			t.Errorf("the worker's status through gateway 2: %s", st.Raw)
		}
		// A second worker of the same id is refused (it would write the
		// same stream), before it starts a CLI.
		twin := startBridge(t, []string{"--ui", "control", "--worker-id", wid, "--bus", cl.url(2)})
		if code := twin.wait(); code != 2 || !strings.Contains(twin.stderr.String(), "already on the bus") {
			t.Errorf("a second worker %s: exit code %d:\n%s", wid, code, tail(twin.stderr.String(), 2000))
		}
	})

	var thread string
	t.Run("receipts", func(t *testing.T) {
		id := ctlID("bus-list")
		r := call(g1, id, "thread/list", nil, http.StatusOK)
		l4OK(t, "thread/list", r, "thread/list")
		if l4Seq(r) == 0 {
			t.Errorf("the receipt has no seq: %s", r)
		}
		// The same request at the other gateway: the same bytes, nothing run.
		call(g2, id, "thread/list", nil, http.StatusOK)
		busEventually(t, 20*time.Second, "the worker's thread", func() string {
			thread = g2.status(wid).Get("status.thread_id").Str
			if thread == "" {
				return "no thread_id yet"
			}
			return ""
		})
		// A request id the bus holds in flight, as a worker killed after
		// its claim leaves it: answered once with internal_error.
		dead := ctlID("bus-dead")
		nc, err := nats.Connect(cl.url(1))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		kv, err := js.KeyValue(context.Background(), "ccbridge_receipts")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Create(context.Background(), wid+"."+base64.RawURLEncoding.EncodeToString([]byte(dead)), []byte("\x00a-process-gone")); err != nil {
			t.Fatal(err)
		}
		r = call(g1, dead, "thread/list", nil, http.StatusInternalServerError)
		if get(r, "payload.code").Str != "internal_error" || !strings.Contains(get(r, "payload.message").Str, "in flight") || l4Seq(r) == 0 {
			t.Errorf("a request left in flight: %s", r)
		}
		call(g2, dead, "thread/list", nil, http.StatusInternalServerError)
	})

	var turnIDs []string
	var latest uint64
	var restarted string // the restarted worker's thread
	t.Run("stream across gateways", func(t *testing.T) {
		c := g2.stream(wid, "", "?after=0")
		id := ctlID("bus-turn")
		r := call(g1, id, "turn/start", l4Text(thread, "hello over the bus"), http.StatusOK)
		turn := l4OK(t, "turn/start", r, "turn/start").Get("turn.id").Str
		turnIDs = append(turnIDs, id)
		from := c.waitFrom(0, "turn/start's receipt", l4IsReceipt(id))
		if !bytes.Equal(c.got[from], r) {
			t.Errorf("the receipt on gateway 2's stream differs from gateway 1's answer:\n%s\n%s", c.got[from], r)
		}
		to := c.waitFrom(from, "turn/completed", l4IsEvent("turn/completed", turn))
		c.hangUp()
		l4Consecutive(t, "gateway 2's stream", c.got)
		if l4Seq(c.got[0]) != 1 {
			t.Errorf("the stream from 0 begins at seq %d", l4Seq(c.got[0]))
		}
		// Switch gateways mid-stream: from the middle, at gateway 1.
		mid := l4Seq(c.got[from])
		c1 := g1.stream(wid, strconv.FormatUint(mid, 10), "")
		for i := range c.got[from+1 : to+1] {
			c1.waitFrom(i, "the line after "+strconv.Itoa(i), func([]byte) bool { return true })
		}
		c1.hangUp()
		for i, l := range c.got[from+1 : to+1] {
			if !bytes.Equal(c1.got[i], l) {
				t.Fatalf("gateway 1 from Last-Event-ID %d, line %d differs:\n%s\n%s", mid, i, c1.got[i], l)
			}
		}
		latest = l4Seq(c.got[to])
	})

	t.Run("stale cursor", func(t *testing.T) {
		// Beyond --retain-events 60: the oldest events are gone.
		for latest < 70 {
			id := ctlID("bus-fill")
			latest = l4Seq(call(g1, id, "thread/list", nil, http.StatusOK))
		}
		st := g2.status(wid)
		oldest := st.Get("oldest_seq").Uint()
		if oldest <= 1 || st.Get("latest_seq").Uint() != latest {
			t.Fatalf("status after %d events with --retain-events 60: %s", latest, st.Raw)
		}
		c := g1.stream(wid, "", "?after=0")
		c.waitFrom(1, "a line after the cursor_stale", func([]byte) bool { return true })
		c.hangUp()
		if get(c.got[0], "event_type").Str != "worker.cursor_stale" || get(c.got[0], "payload.resume_after").Uint() != oldest-1 {
			t.Errorf("a stale cursor: %s", c.got[0])
		}
		if l4Seq(c.got[1]) != oldest {
			t.Errorf("after the cursor_stale: seq %d, want %d", l4Seq(c.got[1]), oldest)
		}
	})

	t.Run("worker restart", func(t *testing.T) {
		w.cmd.Process.Kill()
		<-w.exited
		busEventually(t, 10*time.Second, "worker_unavailable while the worker is gone", func() string {
			code, b := busPost(g2, wid, ctlID("bus-gone"), "thread/list", nil)
			if code != http.StatusServiceUnavailable || get(b, "payload.code").Str != "worker_unavailable" {
				return fmt.Sprintf("HTTP %d: %.300s", code, b)
			}
			return ""
		})
		// Its presence ends with the TTL of its last heartbeat.
		busEventually(t, 15*time.Second, "the worker gone from GET …/workers", func() string {
			_, _, b := g2.do(http.MethodGet, "", "", nil)
			if gjson.GetBytes(b, `workers.#(worker_id=="`+wid+`")`).Exists() {
				return string(b)
			}
			return ""
		})
		// A request done before: its receipt, from the bus, though its
		// worker is gone.
		for _, id := range turnIDs {
			call(g2, id, "turn/start", l4Text(thread, "hello over the bus"), http.StatusOK)
		}
		before := g2.status(wid).Get("latest_seq").Uint()
		// Back behind a leaf node, which dials out to the cluster.
		w = busStartWorker(top, wid, cl.leaf(), "--bus-domain", "hub", "--retain-events", "60") // the test's, not this subtest's
		restarted = g2.status(wid).Get("status.thread_id").Str
		// A receipt that takes longer than --request-wait (thread/start
		// starts a CLI): 202 with the seq after which it comes on the
		// stream, and the receipt itself to a retry at another gateway.
		g3 := svStart(t, svOpts{external: true, args: []string{"--bus", cl.url(1), "--request-wait", "50ms"}})
		c := g2.stream(wid, "", "")
		start := ctlID("bus-202")
		code, b := busPost(g3, wid, start, "thread/start", map[string]any{})
		if code != http.StatusAccepted || get(b, "request_id").Str != start || !get(b, "accepted").Bool() {
			t.Fatalf("thread/start with --request-wait 50ms: HTTP %d: %s", code, b)
		}
		from := c.waitFrom(0, "thread/start's receipt", l4IsReceipt(start))
		c.hangUp()
		if l4Seq(c.got[from]) <= get(b, "seq").Uint() {
			t.Errorf("the receipt's seq %d is not after the 202's %s", l4Seq(c.got[from]), get(b, "seq").Raw)
		}
		r := call(g1, start, "thread/start", map[string]any{}, http.StatusOK)
		if !bytes.Equal(r, c.got[from]) {
			t.Errorf("the retry's receipt differs from the stream's:\n%s\n%s", r, c.got[from])
		}
		restarted = l4OK(t, "thread/start", r, "thread/start").Get("thread.id").Str
		id := ctlID("bus-back")
		r = call(g2, id, "thread/list", nil, http.StatusOK)
		if l4Seq(r) <= before {
			t.Errorf("after the restart a receipt's seq %d is not after %d", l4Seq(r), before)
		}
		lines := busReplay(t, g2, wid, before-10, l4Seq(r))
		l4Consecutive(t, "across the restart", lines)
	})

	t.Run("a node fails", func(t *testing.T) {
		// Node 0 down: gateway 1 goes on at the servers the cluster told
		// it of; the streams and buckets, three replicas each, keep a
		// quorum. One request id retried until it is answered, through
		// either gateway: carried out once.
		cl.kill(0)
		id := ctlID("bus-fault")
		var r []byte
		busEventually(t, 60*time.Second, "a request after node 0 failed", func() string {
			for _, g := range []*svServer{g1, g2} {
				code, b := busPost(g, wid, id, "thread/list", nil)
				r = b
				if code == http.StatusOK {
					return ""
				}
			}
			return string(r)
		})
		receipts[id] = r
		busKept(t, "after node 0 failed", g1, receipts)
		st := g1.status(wid)
		lines := busReplay(t, g1, wid, st.Get("oldest_seq").Uint()-1, l4Seq(r))
		l4Consecutive(t, "after node 0 failed", lines)
		busOnce(t, "after node 0 failed", lines, id)
	})

	t.Run("the bus goes away", func(t *testing.T) {
		after := g2.status(wid).Get("latest_seq").Uint()
		// A turn under way (a lane-000 prompt on stdio, taken while the
		// bus was there) goes on to its end while the bus is away.
		w.stdio.t = t
		slow := ctlID("bus-slow")
		from := len(w.stdio.got)
		w.stdio.send(ctlMsg{"type": "control.stdin.request", "v": 1, "request_id": slow, "team": ctlTeam, "session_id": restarted,
			"agent_id": ctlAgent, "sender": ctlSender, "sent_at": ctlNow(), "content": "SLOW while the bus goes away"}.String())
		w.stdio.waitFrom(from, "the text of "+slow, func(l []byte) bool { return typeOf(l) == "control.worker.text" })
		for i := range cl.nodes {
			cl.kill(i)
		}
		for _, g := range []*svServer{g1, g2} {
			busEventually(t, 10*time.Second, "a gateway's 503", func() string {
				code, b := busPost(g, wid, ctlID("bus-cut"), "thread/list", nil)
				if code != http.StatusServiceUnavailable || get(b, "payload.code").Str != "worker_unavailable" || !strings.Contains(get(b, "payload.message").Str, "lost the bus") {
					return fmt.Sprintf("HTTP %d: %.300s", code, b)
				}
				return ""
			})
		}
		select {
		case <-w.exited:
			t.Fatalf("the worker exited when the bus went away (code %d)", w.code)
		default:
		}
		w.stdio.waitFrom(from, "the turn of "+slow, func(l []byte) bool {
			return typeOf(l) == "control.worker.turn" && bytes.Contains(l, []byte(slow))
		})
		// On its own stdio, a lane-004 request is refused, nothing run;
		// so is a prompt of lane 000, whose request ids are on the bus.
		id := ctlID("bus-stdio")
		w.stdio.send(l4Req(id, "thread/list", nil))
		r := w.stdio.got[w.stdio.waitFrom(len(w.stdio.got), "the refusal of "+id, l4IsReceipt(id))]
		if get(r, "payload.code").Str != "worker_unavailable" || !strings.Contains(get(r, "payload.message").Str, "lost the bus") || get(r, "seq").Exists() {
			t.Errorf("a lane-004 request on stdio while the bus is away: %s", r)
		}
		prompt := ctlMsg{"type": "control.stdin.request", "v": 1, "request_id": ctlID("bus-prompt"), "team": ctlTeam, "session_id": restarted,
			"agent_id": ctlAgent, "sender": ctlSender, "sent_at": ctlNow(), "content": "hello while the bus is away"}
		from = len(w.stdio.got)
		w.stdio.send(prompt.String())
		a := w.stdio.got[w.stdio.waitFrom(from, "the ack of "+prompt.id(), func(l []byte) bool { return get(l, "request_id").Str == prompt.id() })]
		if d := ctlAck(t, a, prompt, "internal_error", false); !strings.Contains(d, "the bus is not reachable") {
			t.Errorf("a lane-000 prompt while the bus is away: %s", a)
		}
		// The bus back: the worker reconnects by itself, its session and
		// CLI kept (the same thread), and nothing acknowledged is lost.
		for i := range cl.nodes {
			cl.start(i)
		}
		id = ctlID("bus-back-again")
		busEventually(t, 60*time.Second, "a request once the bus is back", func() string {
			code, b := busPost(g2, wid, id, "thread/list", nil)
			if code != http.StatusOK {
				return fmt.Sprintf("HTTP %d: %.300s", code, b)
			}
			receipts[id] = b
			return ""
		})
		if th := g2.status(wid).Get("status.thread_id").Str; th != restarted {
			t.Errorf("the worker's thread after the bus came back: %q, want %q", th, restarted)
		}
		// The turn's events, made while the bus was away, are on it now,
		// in order, before the receipt of the first request after.
		lines := busReplay(t, g1, wid, after, l4Seq(receipts[id]))
		l4Consecutive(t, "the events made while the bus was away", lines)
		if count(lines, func(l []byte) bool { return get(l, "payload.method").Str == "turn/completed" }) != 1 {
			t.Errorf("no turn/completed of the turn run while the bus was away:\n%s", lastLines(lines, 12))
		}
		busKept(t, "after the bus came back", g1, receipts)
	})
}

// busKept checks that every receipt given is given again, byte for byte.
func busKept(t *testing.T, what string, g *svServer, receipts map[string][]byte) {
	t.Helper()
	for rid, want := range receipts {
		code, b := busPost(g, get(want, "worker_id").Str, rid, get(want, "payload.method").Str, nil)
		if code == 0 || !bytes.Equal(b, want) {
			t.Errorf("%s: %s: HTTP %d:\n%s\nwant\n%s", what, rid, code, b, want)
		}
	}
}
