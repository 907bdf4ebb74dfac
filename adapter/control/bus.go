package control

// Lane 004 on NATS JetStream (--bus, docs/protocol/bus.md): a worker and
// any number of gateways (ccbridge serve --bus) share
//
//	ccbridge_receipts  a KV bucket, one key per (worker_id, request_id),
//	                   never expiring: the request's claim (in flight, by
//	                   Create, which only one writer wins) and then its
//	                   receipt line (by Update with the claim's revision)
//	ccbridge_presence  a KV bucket, one key per live worker, each write
//	                   with a TTL of its own (the worker's heartbeats)
//	ccbridge_ev_ID     one stream per worker, subjects ccbridge.ev.ID.>:
//	                   its events (ccbridge.ev.ID.e) and receipts
//	                   (ccbridge.ev.ID.r.<request id>), the stream
//	                   sequence being the worker's seq; --retain-events
//	                   bounds it (MaxMsgs, the oldest dropped)
//	ccbridge.req.ID    the worker's requests (request-reply)
//	ccbridge.status.ID the worker's status (request-reply)
//
// and lanes 000 and 001 (a worker's only):
//
//	ccbridge_dedupe    a KV bucket, one key per request id a lane took,
//	                   the outcome living the lane's window (a TTL per key)
//	ccbridge_runs      a KV bucket, lane 001's state of each run (paused)
//	ccbridge.ctl.TEAM.AGENT     the lanes' requests to the worker of that
//	                   team and agent id; every line answering one goes
//	                   to its reply subject
//	ccbridge.ctl.TEAM.AGENT.ev  lane 001's events (STATE, ABORT, …)
//
// Only the worker writes its stream, and each line is published with the
// seq before it expected (Nats-Expected-Last-Sequence), so that the seq
// the line carries is its stream sequence.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BusConfig is how to reach the bus: --bus and its credentials.
type BusConfig struct {
	// URLs is --bus: nats://host:port[,nats://…]; "" keeps lane 004 off
	// the bus.
	URLs string
	// Creds (--bus-creds) is a NATS credentials file; NKey (--bus-nkey) an
	// nkey seed file.
	Creds, NKey string
	// CA, Cert and Key (--bus-ca, --bus-cert, --bus-key): TLS to the
	// bus, the CA that signed its certificate and a client certificate.
	CA, Cert, Key string
	// Replicas of the streams and buckets this process creates (1 when
	// zero; 3 on a three-node cluster: --bus-replicas).
	Replicas int
	// Domain is the JetStream domain the streams and buckets are in
	// (--bus-domain): a worker behind a leaf node names its hub's.
	Domain string
}

// Redacted is URLs with each password or token replaced, for logs and
// errors.
func (c BusConfig) Redacted() string {
	urls := strings.Split(c.URLs, ",")
	for i, u := range urls {
		if p, err := url.Parse(strings.TrimSpace(u)); err == nil && p.User != nil {
			if _, has := p.User.Password(); has {
				p.User = url.UserPassword(p.User.Username(), "xxxxx")
			} else {
				p.User = url.User("xxxxx") // a token
			}
			urls[i] = p.String()
		}
	}
	return strings.Join(urls, ",")
}

// On reports whether lane 004 runs on the bus.
func (c BusConfig) On() bool { return c.URLs != "" }

// BusFlags adds --bus and its options to fs.
func BusFlags(fs *flag.FlagSet, c *BusConfig) {
	fs.StringVar(&c.URLs, "bus", "", "lane 004 on NATS JetStream: the servers' URLs, comma separated (docs/protocol/bus.md)")
	fs.StringVar(&c.Creds, "bus-creds", "", "--bus: a NATS credentials file (user JWT and nkey seed)")
	fs.StringVar(&c.NKey, "bus-nkey", "", "--bus: a file holding an nkey seed")
	fs.StringVar(&c.CA, "bus-ca", "", "--bus: TLS: the CA certificate (PEM) the servers' certificates are checked against")
	fs.StringVar(&c.Cert, "bus-cert", "", "--bus: TLS: a client certificate (PEM); needs --bus-key")
	fs.StringVar(&c.Key, "bus-key", "", "--bus: TLS: the client certificate's private key (PEM)")
	fs.StringVar(&c.Domain, "bus-domain", "", "--bus: the JetStream domain of the streams and buckets (a leaf node's hub)")
	fs.IntVar(&c.Replicas, "bus-replicas", 1, "--bus: replicas of the streams and buckets created (3 on a three-node cluster)")
}

// Check checks the options that go together.
func (c BusConfig) Check() error {
	switch {
	case !c.On() && (c.Creds != "" || c.NKey != "" || c.CA != "" || c.Cert != "" || c.Key != "" || c.Domain != ""):
		return errors.New("--bus-creds, --bus-nkey, --bus-ca, --bus-cert, --bus-key and --bus-domain go with --bus")
	case (c.Cert == "") != (c.Key == ""):
		return errors.New("--bus-cert and --bus-key go together: give both or neither")
	case c.Creds != "" && c.NKey != "":
		return errors.New("--bus-creds and --bus-nkey: give one or the other")
	case c.Replicas < 0 || c.Replicas > 5:
		return fmt.Errorf("--bus-replicas %d: want 1 to 5", c.Replicas)
	}
	return nil
}

// The bus's names (docs/protocol/bus.md).
const (
	BusReceipts = "ccbridge_receipts"
	BusPresence = "ccbridge_presence"
	BusDedupe   = "ccbridge_dedupe"
	BusRuns     = "ccbridge_runs"
	busCtlPf    = "ccbridge.ctl."
	busStreamPf = "ccbridge_ev_"
	busEvPf     = "ccbridge.ev."
	busReqPf    = "ccbridge.req."
	busStatusPf = "ccbridge.status."
)

// busTimeout bounds one call to the bus.
const busTimeout = 5 * time.Second

// Errors of the bus.
var (
	// ErrBusDown: the process is not connected to the bus (it reconnects
	// by itself).
	ErrBusDown = errors.New("the bus is not reachable (NATS disconnected); reconnecting")
	// ErrBusWorkerID: a worker id the bus cannot carry.
	ErrBusWorkerID = errors.New("a worker id on the bus is 1 to 64 of A-Z a-z 0-9 _ - (no dot: it would split the subject)")
)

// BusWorkerID reports whether id can name a worker on the bus.
func BusWorkerID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// busSubjectToken reports whether s can be one token of a subject as
// it is (a team or an agent id, which permissions name): 1 to 128
// bytes, no space or control character, no '.', '*' or '>'.
func busSubjectToken(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f || c == '.' || c == '*' || c == '>' {
			return false
		}
	}
	return true
}

// Bus is one connection to the bus with its buckets: a worker's or a
// gateway's. Safe for concurrent use.
type Bus struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	receipts jetstream.KeyValue
	presence jetstream.KeyValue
	replicas int
	log      *slog.Logger

	mu      sync.Mutex
	lost    chan struct{} // closed while disconnected
	isDown  bool
	closing atomic.Bool   // Close was called: a disconnection is no news
	refusal error         // the server's last permissions violation
	refused chan struct{} // signalled at each
}

// DialBus connects to the bus and makes sure of the buckets. name names
// the connection in the servers' monitoring. It fails when no server
// answers now; once connected, a lost connection is retried for ever.
func DialBus(c BusConfig, name string, log *slog.Logger) (*Bus, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	b := &Bus{replicas: max(c.Replicas, 1), log: log, lost: make(chan struct{}), refused: make(chan struct{}, 1)}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// Publishes fail at once while disconnected, rather than wait
		// in a buffer: what cannot be recorded is retried by its owner.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			b.setDown(true)
			if !b.closing.Load() {
				log.Warn("bus: disconnected; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			b.setDown(false)
			log.Info("bus: reconnected", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ClosedHandler(func(*nats.Conn) { b.setDown(true) }),
		// An error the server sends on its own (a permissions violation
		// above all), to the log rather than to stderr as it is.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				b.mu.Lock()
				b.refusal = err
				b.mu.Unlock()
				select {
				case b.refused <- struct{}{}:
				default:
				}
			}
			if sub != nil {
				log.Warn("bus: the server refused", "err", err, "subject", sub.Subject)
				return
			}
			log.Warn("bus: the server refused", "err", err)
		}),
	}
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	if c.NKey != "" {
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, fmt.Errorf("--bus-nkey: %w", err)
		}
		opts = append(opts, o)
	}
	if c.CA != "" || c.Cert != "" {
		tc, err := busTLS(c)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(tc))
	}
	nc, err := nats.Connect(c.URLs, opts...)
	if err != nil {
		return nil, fmt.Errorf("--bus %s: %w", c.Redacted(), err)
	}
	b.nc = nc
	if c.Domain != "" {
		b.js, err = jetstream.NewWithDomain(nc, c.Domain)
	} else {
		b.js, err = jetstream.New(nc)
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("--bus: %w", err)
	}
	ctx, cancel := b.setupCtx()
	defer cancel()
	b.receipts, err = b.bucket(ctx, jetstream.KeyValueConfig{
		Bucket: BusReceipts, Description: "ccbridge lane 004: one receipt per (worker_id, request_id), for ever",
		History: 1, Replicas: b.replicas, Storage: jetstream.FileStorage,
	})
	if err == nil {
		b.presence, err = b.bucket(ctx, jetstream.KeyValueConfig{
			Bucket: BusPresence, Description: "ccbridge lane 004: the live workers, each key with the TTL of its heartbeat",
			History: 1, Replicas: b.replicas, Storage: jetstream.FileStorage, LimitMarkerTTL: time.Second,
		})
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("--bus: the buckets: %w", b.withRefusal(err))
	}
	return b, nil
}

// setupCtx bounds the setting up of streams and buckets: 15 s, or until
// the server refuses a call (a permissions violation, which a JetStream
// call otherwise sees as no answer).
func (b *Bus) setupCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*busTimeout)
	go func() {
		select {
		case <-b.refused:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// withRefusal adds to err the server's permissions violation, if there was
// one: what was refused says what the user lacks.
func (b *Bus) withRefusal(err error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil || b.refusal == nil {
		return err
	}
	return fmt.Errorf("%w (the bus refused: %v)", err, b.refusal)
}

// bucket opens a bucket, or creates it when there is none: a bucket
// that exists keeps its settings, so that processes of other
// --bus-replicas do not change them back and forth.
func (b *Bus) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := b.js.KeyValue(ctx, cfg.Bucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	kv, err = b.js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		return b.js.KeyValue(ctx, cfg.Bucket)
	}
	return kv, err
}

// workerBuckets opens, or makes, the buckets of lanes 000 and 001.
func (b *Bus) workerBuckets() (dedupe, runs jetstream.KeyValue, err error) {
	ctx, cancel := b.setupCtx()
	defer cancel()
	dedupe, err = b.bucket(ctx, jetstream.KeyValueConfig{
		Bucket: BusDedupe, Description: "ccbridge lanes 000 and 001: the request ids taken, each for its lane's window",
		History: 1, Replicas: b.replicas, Storage: jetstream.FileStorage, LimitMarkerTTL: time.Second,
	})
	if err == nil {
		runs, err = b.bucket(ctx, jetstream.KeyValueConfig{
			Bucket: BusRuns, Description: "ccbridge lane 001: each run's state (paused, iteration, model)",
			History: 1, Replicas: b.replicas, Storage: jetstream.FileStorage,
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--bus: the buckets of lanes 000 and 001: %w", b.withRefusal(b.busErr(err)))
	}
	return dedupe, runs, nil
}

// busTLS is --bus-ca, --bus-cert and --bus-key as a TLS configuration.
func busTLS(c BusConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CA != "" {
		pem, err := os.ReadFile(c.CA)
		if err != nil {
			return nil, fmt.Errorf("--bus-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--bus-ca %s: no PEM certificate in it", c.CA)
		}
		tc.RootCAs = pool
	}
	if c.Cert != "" {
		cert, err := tls.LoadX509KeyPair(c.Cert, c.Key)
		if err != nil {
			return nil, fmt.Errorf("--bus-cert %s, --bus-key %s: %w", c.Cert, c.Key, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

func (b *Bus) setDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case down && !b.isDown:
		close(b.lost)
	case !down && b.isDown:
		b.lost = make(chan struct{})
	}
	b.isDown = down
}

// Lost returns a channel closed once the connection is lost (a new one
// is made when it comes back: take it again then).
func (b *Bus) Lost() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lost
}

// Connected reports whether the bus is reachable now.
func (b *Bus) Connected() bool { return b.nc.IsConnected() }

// Close drains nothing: it closes the connection.
func (b *Bus) Close() {
	if b != nil {
		b.closing.Store(true)
		b.nc.Close()
	}
}

// busStream names a worker's stream, busEvents its events' subject,
// busReceipt a receipt's.
func busStream(workerID string) string { return busStreamPf + workerID }
func busEvents(workerID string) string { return busEvPf + workerID + ".e" }
func busReceipt(workerID, requestID string) string {
	return busEvPf + workerID + ".r." + busKeyPart(requestID)
}

// busKeyPart is a request id as one token of a key or subject: base64url,
// whatever bytes it holds.
func busKeyPart(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// busReceiptKey is the receipts bucket's key of a request.
func busReceiptKey(workerID, requestID string) string {
	return workerID + "." + busKeyPart(requestID)
}

// stream makes sure of a worker's stream: retain events at most, the
// oldest dropped.
func (b *Bus) stream(ctx context.Context, workerID string, retain int) (jetstream.Stream, error) {
	return b.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        busStream(workerID),
		Description: "ccbridge lane 004: worker " + workerID + "'s events and receipts; the stream sequence is the seq",
		Subjects:    []string{busEvPf + workerID + ".>"},
		Retention:   jetstream.LimitsPolicy,
		MaxMsgs:     int64(retain),
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		Replicas:    b.replicas,
		Duplicates:  2 * time.Minute,
	})
}

// busErr says ErrBusDown for an error of a bus that is not reachable:
// this connection is down, or JetStream does not answer behind it (a leaf
// node whose hub is gone: the connection to the leaf is up, nobody
// answers the JetStream API).
func (b *Bus) busErr(err error) error {
	switch {
	case err == nil:
		return nil
	case !b.nc.IsConnected(),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return fmt.Errorf("%w (%v)", ErrBusDown, err)
	}
	return err
}

// checkBusWorker checks a worker id is one the bus carries.
func checkBusWorker(id string) error {
	if !BusWorkerID(id) {
		return fmt.Errorf("--worker-id %q: %w", id, ErrBusWorkerID)
	}
	return nil
}

// busInFlight is a process's claim marker: a NUL, then the instance.
func busInFlight(instance string) []byte { return []byte("\x00" + instance) }

// busClaim reads a receipts bucket value: in flight (by instance) or a
// receipt line.
func busClaim(v []byte) (instance string, inFlight bool) {
	if len(v) > 0 && v[0] == 0 {
		return string(v[1:]), true
	}
	return "", false
}
