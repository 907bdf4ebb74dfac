package e2e

// Lane 004 on the bus end to end (docs/protocol/bus.md): real NATS
// servers in this process (nats-server, JetStream on, a three-node
// cluster with every stream and bucket replicated three times, and a
// leaf node), a real `ccbridge --ui control --bus` worker with the real
// CLI behind it (restarted once, behind the leaf node), and
// two `ccbridge serve --bus` gateways in front, driven over HTTP with the
// serve helpers (sv…). One worker serves every check but the methods',
// which run on it and on a second one at once. TestBusLane004Auth runs
// workers and gateways against a server that wants TLS and an nkey.
// Helpers of this file start with bus.

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
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
	agent string // its --agent-id: one worker of a team and agent on the bus
	stdio *ctlLane
}

// busStartWorker runs `ccbridge --ui control --bus URLS` as worker id and
// waits until it serves lane 004 on the bus; its stdout is kept (the
// checks go through the gateways, and through its stdio where the bus is
// away).
func busStartWorker(t *testing.T, id, urls string, args ...string) *busWorker {
	t.Helper()
	w := &busWorker{sid: uuid.NewString(), agent: ctlAgent + "-" + id}
	w.bridge = startBridge(t, append([]string{"--ui", "control", "--worker-id", id, "--bus", urls, "--bus-replicas", "3",
		"--team", ctlTeam, "--agent-id", w.agent, "--allow-sender", ctlSender, "--session-id", w.sid}, args...), "CCBRIDGE_LOG_LEVEL=info")
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
	call := func(t *testing.T, g *svServer, id, method string, params any, want int) []byte {
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
		r := call(t, g1, id, "thread/list", nil, http.StatusOK)
		l4OK(t, "thread/list", r, "thread/list")
		if l4Seq(r) == 0 {
			t.Errorf("the receipt has no seq: %s", r)
		}
		// The same request at the other gateway: the same bytes, nothing run.
		call(t, g2, id, "thread/list", nil, http.StatusOK)
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
		r = call(t, g1, dead, "thread/list", nil, http.StatusInternalServerError)
		if get(r, "payload.code").Str != "internal_error" || !strings.Contains(get(r, "payload.message").Str, "in flight") || l4Seq(r) == 0 {
			t.Errorf("a request left in flight: %s", r)
		}
		call(t, g2, dead, "thread/list", nil, http.StatusInternalServerError)
	})

	var turnIDs []string
	var latest uint64
	var restarted string // the restarted worker's thread
	t.Run("stream across gateways", func(t *testing.T) {
		useFakeAPI(t, w.api)
		c := g2.stream(wid, "", "?after=0")
		// One turn/start sent 200 times at once, half through each
		// gateway: one turn, one request to the model, one receipt, the
		// same bytes in every answer.
		id, tok := ctlID("bus-turn"), token("BUS")
		line := l4Req(id, "turn/start", l4Text(thread, "hello over the bus "+tok))
		r := busBurst(t, []*svServer{g1, g2}, wid, line, 200)
		receipts[id] = r
		turn := l4OK(t, "turn/start", r, "turn/start").Get("turn.id").Str
		turnIDs = append(turnIDs, id)
		from := c.waitFrom(0, "turn/start's receipt", l4IsReceipt(id))
		if !bytes.Equal(c.got[from], r) {
			t.Errorf("the receipt on gateway 2's stream differs from the gateways' answers:\n%s\n%s", c.got[from], r)
		}
		to := c.waitFrom(from, "turn/completed", l4IsEvent("turn/completed", turn))
		c.hangUp()
		l4Consecutive(t, "gateway 2's stream", c.got)
		busOnce(t, "200 retries of one turn/start", c.got, id)
		if n := count(c.got, l4IsEvent("turn/started", "")); n != 1 {
			t.Errorf("200 retries of one turn/start: %d turns started, want 1", n)
		}
		ctlPromptCount(t, tok, 1)
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

	t.Run("a gateway killed mid-turn", func(t *testing.T) {
		// A client streams a SLOW answer from a third gateway, which is
		// killed (SIGKILL) while the answer comes; the client resumes at
		// gateway 2 with its Last-Event-ID and gets exactly what it
		// missed, in order, once: the lines a client that streamed at
		// gateway 2 all along got after that seq.
		gk := busGateway(t, cl.url(1))
		all := g2.stream(wid, "", "")
		c := gk.stream(wid, "", "")
		id := ctlID("bus-slow-gw")
		r := call(t, g1, id, "turn/start", l4Text(thread, "SLOW "+token("slow")), http.StatusOK)
		slow := l4OK(t, "turn/start SLOW", r, "turn/start").Get("turn.id").Str
		c.waitFrom(0, "two deltas of the SLOW turn", func() func([]byte) bool {
			n := 0
			return func(l []byte) bool {
				if l4IsEvent("item/agentMessage/delta", slow)(l) {
					n++
				}
				return n == 2
			}
		}())
		gk.cmd.Process.Kill()
		<-gk.exited
		for c.read() {
		}
		c.hangUp()
		last := l4Seq(c.got[len(c.got)-1])
		l4Consecutive(t, "the killed gateway's stream", c.got)
		// The rest at gateway 2, from the last event read; the turn is
		// interrupted meanwhile, so that it ends soon.
		c2 := g2.stream(wid, strconv.FormatUint(last, 10), "")
		ir := call(t, g2, ctlID("bus-int"), "turn/interrupt", map[string]any{"threadId": thread, "turnId": slow}, http.StatusOK)
		done := c2.waitFrom(0, "the interrupted turn/completed", l4IsEvent("turn/completed", slow))
		c2.hangUp()
		if st := get(c2.got[done], "payload.params.turn.status").Str; st != "interrupted" || l4Seq(c2.got[done]) < l4Seq(ir) {
			t.Errorf("the SLOW turn ended %q (the interrupt's receipt seq %d): %s", st, l4Seq(ir), c2.got[done])
		}
		if l4Seq(c2.got[0]) != last+1 {
			t.Errorf("the resumed stream begins at seq %d, want %d", l4Seq(c2.got[0]), last+1)
		}
		l4Consecutive(t, "the resumed stream", c2.got)
		i := all.waitFrom(0, "the interrupted turn/completed at gateway 2", l4IsEvent("turn/completed", slow))
		all.hangUp()
		j := slices.IndexFunc(all.got, func(l []byte) bool { return l4Seq(l) == last+1 })
		if j < 0 || !slices.EqualFunc(all.got[j:i+1], c2.got[:done+1], bytes.Equal) {
			t.Errorf("the resumed stream (seqs %v) is not what the killed gateway's client missed (seqs %v)", svSeqs(c2.got[:done+1]), svSeqs(all.got[max(j, 0):i+1]))
		}
		for _, l := range c2.got[:done+1] {
			if slices.ContainsFunc(c.got, func(k []byte) bool { return bytes.Equal(k, l) }) {
				t.Errorf("a line the client had got again after the resume: %.300s", l)
			}
		}
	})

	t.Run("stale cursor", func(t *testing.T) {
		// Beyond --retain-events 60: the oldest events are gone.
		for latest < 70 {
			id := ctlID("bus-fill")
			latest = l4Seq(call(t, g1, id, "thread/list", nil, http.StatusOK))
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

	t.Run("methods", func(t *testing.T) {
		// Every lane-004 method on two workers at once, each its own
		// process, HOME and folder, through both gateways in turn: the
		// scenarios written for stdio (l4Errors, l4Steer) and the thread
		// methods (busThreads), driven over HTTP by busDriven.
		// The two run at once from goroutines of this test, not as
		// parallel subtests: those would wait for a slot among the
		// package's other parallel tests (-parallel).
		var both sync.WaitGroup
		both.Add(2)
		go t.Run(wid, func(t *testing.T) {
			defer both.Done()
			useFakeAPI(t, w.api)
			busMethods(t, busDriven(t, w, wid, thread, g1, g2))
		})
		go t.Run("bus-w2", func(t *testing.T) {
			defer both.Done()
			w2 := busStartWorker(t, "bus-w2", cl.url(0))
			for _, g := range []*svServer{g1, g2} {
				busEventually(t, 20*time.Second, "both workers in GET …/workers", func() string {
					_, _, b := g.do(http.MethodGet, "", "", nil)
					if !gjson.GetBytes(b, `workers.#(worker_id=="`+wid+`")`).Exists() || !gjson.GetBytes(b, `workers.#(worker_id=="bus-w2")`).Exists() {
						return string(b)
					}
					return ""
				})
			}
			busMethods(t, busDriven(t, w2, "bus-w2", w2.sid, g2, g1))
		})
		both.Wait()
	})

	t.Run("worker restart", func(t *testing.T) {
		// Killed mid-turn: during a SLOW answer.
		sc := g2.stream(wid, "", "")
		slowID := ctlID("bus-slow")
		sr := call(t, g1, slowID, "turn/start", l4Text(thread, "SLOW "+token("slow")), http.StatusOK)
		slow := l4OK(t, "turn/start SLOW", sr, "turn/start").Get("turn.id").Str
		sc.waitFrom(0, "a delta of the SLOW turn", l4IsEvent("item/agentMessage/delta", slow))
		w.cmd.Process.Kill()
		<-w.exited
		sc.hangUp()
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
		for _, id := range append(turnIDs, slowID) {
			call(t, g2, id, "turn/start", l4Text(thread, "hello over the bus"), http.StatusOK)
		}
		before := g2.status(wid).Get("latest_seq").Uint()
		// Back behind a leaf node, which dials out to the cluster; its
		// stream keeps more now (a node fails during a burst of 60).
		w = busStartWorker(top, wid, cl.leaf(), "--bus-domain", "hub", "--retain-events", "1000") // the test's, not this subtest's
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
		r := call(t, g1, start, "thread/start", map[string]any{}, http.StatusOK)
		if !bytes.Equal(r, c.got[from]) {
			t.Errorf("the retry's receipt differs from the stream's:\n%s\n%s", r, c.got[from])
		}
		restarted = l4OK(t, "thread/start", r, "thread/start").Get("thread.id").Str
		id := ctlID("bus-back")
		r = call(t, g2, id, "thread/list", nil, http.StatusOK)
		if l4Seq(r) <= before {
			t.Errorf("after the restart a receipt's seq %d is not after %d", l4Seq(r), before)
		}
		lines := busReplay(t, g2, wid, before-10, l4Seq(r))
		l4Consecutive(t, "across the restart", lines)
		// The turn the kill cut off ends once, after the restart.
		ends := slices.DeleteFunc(slices.Clone(lines), func(l []byte) bool { return !l4IsEvent("turn/completed", slow)(l) })
		if len(ends) != 1 || get(ends[0], "payload.params.turn.status").Str != "failed" && get(ends[0], "payload.params.turn.status").Str != "interrupted" || l4Seq(ends[0]) <= before {
			t.Errorf("the turn cut off by the kill (the stream was at seq %d then): %d turn/completed:\n%s", before, len(ends), lastLines(ends, 4))
		}
	})

	t.Run("a node fails", func(t *testing.T) {
		// Node 0 killed during a burst of 60 new requests at once, half
		// through each gateway (gateway 1 goes on at the servers the
		// cluster told it of; the streams and buckets, three replicas
		// each, keep a quorum): each request id retried until it has a
		// receipt, through either gateway; each has exactly one, and the
		// worker's stream no gap.
		after := g1.status(wid).Get("latest_seq").Uint()
		ids := make([]string, 60)
		got := make([][]byte, len(ids))
		var answered atomic.Int32
		first := make(chan struct{}) // closed at the burst's first receipt
		var once sync.Once
		var wg sync.WaitGroup
		for i := range ids {
			ids[i] = ctlID("bus-burst")
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n, deadline := i, time.Now().Add(60*time.Second); time.Now().Before(deadline); n++ {
					code, b := busPost([]*svServer{g1, g2}[n%2], wid, ids[i], "thread/list", nil)
					got[i] = b
					if code != 0 && get(b, "event_type").Str != "" && get(b, "seq").Exists() { // a receipt (not a 202)
						answered.Add(1)
						once.Do(func() { close(first) })
						return
					}
					time.Sleep(100 * time.Millisecond) // a client's pause before a retry
				}
			}()
		}
		select {
		case <-first:
		case <-time.After(30 * time.Second):
			t.Fatal("no receipt of the burst within 30 s")
		}
		killed := answered.Load()
		cl.kill(0)
		down := answered.Load()
		wg.Wait()
		t.Logf("node 0 killed after %d receipts of %d, down after %d", killed, len(ids), down)
		if killed == int32(len(ids)) {
			t.Errorf("the burst was over before node 0 was killed")
		}
		var to uint64
		for i, id := range ids {
			if get(got[i], "event_type").Str == "" || !get(got[i], "seq").Exists() {
				t.Fatalf("%s: no receipt within 60 s after node 0 failed: %.300s", id, got[i])
			}
			receipts[id] = got[i]
			to = max(to, l4Seq(got[i]))
		}
		busKept(t, "after node 0 failed", g1, receipts)
		lines := busReplay(t, g1, wid, after, to)
		l4Consecutive(t, "after node 0 failed", lines)
		busOnce(t, "after node 0 failed", lines, ids...)
	})

	t.Run("the bus goes away", func(t *testing.T) {
		after := g2.status(wid).Get("latest_seq").Uint()
		// A turn under way (a lane-000 prompt on stdio, taken while the
		// bus was there) goes on to its end while the bus is away.
		w.stdio.t = t
		slow := ctlID("bus-slow")
		from := len(w.stdio.got)
		w.stdio.send(ctlMsg{"type": "control.stdin.request", "v": 1, "request_id": slow, "team": ctlTeam, "session_id": restarted,
			"agent_id": w.agent, "sender": ctlSender, "sent_at": ctlNow(), "content": "SLOW while the bus goes away"}.String())
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
			"agent_id": w.agent, "sender": ctlSender, "sent_at": ctlNow(), "content": "hello while the bus is away"}
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
		// A new request id each try: one that reached the worker while
		// the cluster was still electing may have been claimed and its
		// receipt not recorded, and is then answered internal_error for
		// ever (docs/protocol/bus.md, "A request"); such a receipt,
		// and any other recorded, must be kept as given.
		busEventually(t, 60*time.Second, "a request once the bus is back", func() string {
			id = ctlID("bus-back-again")
			code, b := busPost(g2, wid, id, "thread/list", nil)
			if get(b, "seq").Exists() {
				receipts[id] = b
			}
			if code != http.StatusOK {
				return fmt.Sprintf("HTTP %d: %.300s", code, b)
			}
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

// busBurst posts one request line n times at once, spread over the
// gateways, and returns the answer: every one must be HTTP 200 and the
// same bytes.
func busBurst(t *testing.T, gs []*svServer, worker, line string, n int) []byte {
	t.Helper()
	codes, bodies := make([]int, n), make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := gs[i%len(gs)]
			code, _, b, err := svDo(g.client, http.MethodPost, g.base+"/"+worker+"/requests", "", strings.NewReader(line))
			if err != nil {
				b = []byte(err.Error())
			}
			codes[i], bodies[i] = code, b
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != http.StatusOK || !bytes.Equal(bodies[i], bodies[0]) {
			t.Fatalf("%d copies of one request at once: answer %d is HTTP %d:\n%.600s\nanswer 0 HTTP %d:\n%.600s", n, i, codes[i], bodies[i], codes[0], bodies[0])
		}
	}
	return bodies[0]
}

// busDriven is worker w (id, on thread) as a ctlWorker whose stdio is an
// HTTP client of the gateways gs: each request line is posted to the next
// gateway in turn, and the lines read are those of one stream of the
// worker (at gs[0], from its latest seq), with the refusals that carry no
// seq (which are no event of the stream) added as they are answered, as
// stdio writes them. So the lane-004 scenarios and helpers written for
// stdio (l4Errors, l4Steer, call, turn) drive it as they are.
func busDriven(t *testing.T, w *busWorker, id, thread string, gs ...*svServer) *ctlWorker {
	t.Helper()
	st := gs[0].stream(id, "", "")
	t.Cleanup(st.hangUp)
	lines := make(chan []byte, 1<<14)
	go func() {
		for l := range st.lines {
			lines <- l
		}
	}()
	n := 0
	post := func(line string) error {
		g := gs[n%len(gs)]
		n++
		_, _, b, err := svDo(g.client, http.MethodPost, g.base+"/"+id+"/requests", "", strings.NewReader(line))
		if err == nil && get(b, "event_type").Str == "worker.error" && !get(b, "seq").Exists() {
			lines <- b
		}
		return err
	}
	lane := &ctlLane{t: t, name: "worker " + id + " through the gateways", lines: lines, write: post}
	return &ctlWorker{t: t, b: w.bridge, sid: thread, stdio: lane, worker: id}
}

// busMethods runs every lane-004 method on w (busDriven): the errors,
// turns, interrupts and an approval of l4Errors, the steering of
// l4Steer, then busThreads.
func busMethods(t *testing.T, w *ctlWorker) {
	t.Helper()
	l4Errors("gateways")(t, w)
	l4Steer(t, w)
	busThreads(t, w)
}

// busThreads: the thread methods on w (busDriven), from its thread a:
// thread/start (a new thread b in the worker's folder, thread/started),
// a turn on b, thread/list (both threads, b's preview), thread/read of b
// with its turn, thread/rollback of b's turn as a dry run, thread/resume
// of a (the next turn runs in a), and ccbridge/events/replay, which over
// HTTP is invalid_request (a client asks the stream for its cursor);
// every line read in the seed's shape, seqs one apart.
func busThreads(t *testing.T, w *ctlWorker) {
	t.Helper()
	c := l4Stdio(w)
	cwd := mustReal(t, w.b.dir)
	a := w.sid
	from := len(c.got)
	th := l4OK(t, "thread/start", c.call(ctlID("start"), "thread/start", map[string]any{}), "thread/start").Get("thread")
	b := th.Get("id").Str
	if uuid.Validate(b) != nil || b == a || th.Get("cwd").Str != cwd {
		t.Fatalf("thread/start's thread (the worker's %s, in %s): %s", a, cwd, th.Raw)
	}
	c.waitFrom(from, "thread/started", func(l []byte) bool {
		return l4IsEvent("thread/started", "")(l) && get(l, "payload.params.thread.id").Str == b
	})
	textB := "on b " + token("BUSB")
	turnB, f, to := c.turn(b, textB)
	l4CheckTurn(t, "a turn on the new thread", c.workerLines(f, to), b, turnB, l4Mock, "completed")
	list := l4OK(t, "thread/list", c.call(ctlID("list"), "thread/list", map[string]any{"limit": 10}), "thread/list")
	if e := l4Listed(t, list, b); e.Get("preview").Str != textB || e.Get("cwd").Str != cwd {
		t.Errorf("thread/list's entry for %s: %s", b, e.Raw)
	}
	l4Listed(t, list, a)
	read := l4OK(t, "thread/read", c.call(ctlID("read"), "thread/read", map[string]any{"threadId": b, "includeTurns": true}), "thread/read")
	if users, agents := l4Turns(read); !slices.Equal(users, []string{textB}) || !slices.Equal(agents, []string{l4Mock}) || read.Get("thread.turns.0.id").Str != turnB {
		t.Errorf("thread/read of %s with turns: users %q, agents %q: %.1500s", b, users, agents, read.Raw)
	}
	dry := l4OK(t, "thread/rollback", c.call(ctlID("rb"), "thread/rollback", map[string]any{"threadId": b, "numTurns": 1, "dryRun": true}), "thread/rollback")
	if !dry.Get("rollback.dryRun").Bool() || dry.Get("rollback.numTurns").Int() != 1 || dry.Get("rollback.prompt").Str != textB || dry.Get("thread.turns.#").Int() != 1 {
		t.Errorf("thread/rollback, a dry run of %s's turn: %s", b, dry.Raw)
	}
	if res := l4OK(t, "thread/resume", c.call(ctlID("resume"), "thread/resume", map[string]any{"threadId": a}), "thread/resume"); res.Get("thread.id").Str != a {
		t.Errorf("thread/resume of %s: %s", a, res.Raw)
	}
	turnA, f, to := c.turn(a, "back on a "+token("BUSA"))
	l4CheckTurn(t, "a turn on the resumed thread", c.workerLines(f, to), a, turnA, l4Mock, "completed")
	l4Fail(t, "ccbridge/events/replay over HTTP", c.call(ctlID("replay"), "ccbridge/events/replay", map[string]any{"after": 0}), "ccbridge/events/replay", "invalid_request")
	l4Consecutive(t, "the whole stream", c.got)
	c.checkShapes()
}

// TestBusLane004Auth: a NATS server (JetStream) that wants TLS and an
// nkey. A worker and a gateway given a wrong nkey (--bus-nkey) or wrong
// credentials (--bus-creds), and a gateway given no CA for the server's
// certificate, exit at once with code 2 and say why on stderr. A gateway
// with the right nkey and --bus-ca serves; a worker with them reaches
// JetStream over TLS: it gets as far as its id's presence, which the
// test holds, and exits with code 2 saying its id is already on the bus
// (so that no CLI starts).
func TestBusLane004Auth(t *testing.T) {
	t.Parallel()
	_, ca, cert, key := svTLS(t)
	dir := t.TempDir()
	seedFile := func(name string) (string, string) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		seed, _ := kp.Seed()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, append(seed, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		return path, pub
	}
	right, pub := seedFile("right.nk")
	wrong, _ := seedFile("wrong.nk")
	wrongSeed, _ := os.ReadFile(wrong)
	// A credentials file in the right form, of a user the server does
	// not know (its JWT signed by no operator the server trusts).
	creds := filepath.Join(dir, "wrong.creds")
	jwt := base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"JWT","alg":"ed25519-nkey"}`)) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"`+pub+`","nats":{"type":"user"}}`)) + ".c2lnbmF0dXJl"
	if err := os.WriteFile(creds, []byte("-----BEGIN NATS USER JWT-----\n"+jwt+"\n------END NATS USER JWT------\n\n"+
		"-----BEGIN USER NKEY SEED-----\n"+strings.TrimSpace(string(wrongSeed))+"\n------END USER NKEY SEED------\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	url := busStartServer(t, &server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}, TLS: true, TLSConfig: tc, TLSTimeout: 2})

	// refused checks an exit with code 2 within 10 s of the start, and
	// stderr saying why.
	refused := func(t *testing.T, what string, start time.Time, code int, stderr string, why ...string) {
		t.Helper()
		if d := time.Since(start); code != 2 || d > 10*time.Second || !slices.ContainsFunc(why, func(w string) bool { return strings.Contains(stderr, w) }) {
			t.Errorf("%s: exit code %d after %v, want 2 within 10 s, and stderr saying %q:\n%s", what, code, d.Round(time.Millisecond), why, tail(stderr, 2000))
		}
	}
	const authWhy = "Authorization Violation"
	for _, tc := range []struct {
		what    string
		args    []string
		why     []string
		workers bool // a worker too (the CA's check is the same code in both: a gateway's alone)
	}{
		{"a wrong nkey", []string{"--bus-nkey", wrong, "--bus-ca", ca}, []string{authWhy}, true},
		{"wrong credentials", []string{"--bus-creds", creds, "--bus-ca", ca}, []string{authWhy}, true},
		{"no CA for the server's certificate", []string{"--bus-nkey", right}, []string{"certificate signed by unknown authority", "x509"}, false},
	} {
		if tc.workers {
			t.Run("worker with "+tc.what, func(t *testing.T) {
				start := time.Now()
				b := startBridge(t, append([]string{"--ui", "control", "--worker-id", "bus-auth", "--bus", url}, tc.args...))
				code := b.wait()
				refused(t, "a worker with "+tc.what, start, code, b.stderr.String(), tc.why...)
			})
		}
		t.Run("gateway with "+tc.what, func(t *testing.T) {
			start := time.Now()
			g := svStart(t, svOpts{external: true, mayExit: true, args: append([]string{"--bus", url}, tc.args...)})
			if g.base != "" {
				t.Fatalf("a gateway with %s serves", tc.what)
			}
			refused(t, "a gateway with "+tc.what, start, g.code, g.stderr.String(), tc.why...)
		})
	}
	t.Run("the right nkey and CA", func(t *testing.T) {
		g := svStart(t, svOpts{external: true, args: []string{"--bus", url, "--bus-nkey", right, "--bus-ca", ca}})
		if code, _, b := g.do(http.MethodGet, "", "", nil); code != http.StatusOK || !gjson.GetBytes(b, "workers").IsArray() {
			t.Errorf("GET …/workers through a gateway with the right nkey: HTTP %d: %s", code, b)
		}
		nkey, err := nats.NkeyOptionFromSeed(right)
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(url, nkey, nats.RootCAs(ca))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		kv, err := js.KeyValue(context.Background(), "ccbridge_presence")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(context.Background(), "bus-auth", []byte(`{"worker_id":"bus-auth","held by":"the test"}`)); err != nil {
			t.Fatal(err)
		}
		b := startBridge(t, []string{"--ui", "control", "--worker-id", "bus-auth", "--bus", url, "--bus-nkey", right, "--bus-ca", ca})
		if code := b.wait(); code != 2 || !strings.Contains(b.stderr.String(), "already on the bus") {
			t.Errorf("a worker with the right nkey and CA, its id held: exit code %d:\n%s", code, tail(b.stderr.String(), 2000))
		}
	})
}
