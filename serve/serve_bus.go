package serve

// ccbridge serve --bus: a stateless gateway (docs/protocol/bus.md). The
// same HTTP API as serve_http.go's for lane 004, over the workers on the
// bus (ccbridge --ui control --bus): a request's receipt is the receipts
// bucket's when it has one, else the worker's answer; the stream is the
// worker's stream read from the cursor; the list is the presence bucket.
// Nothing is kept here: any gateway answers as any other.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/adapter/control"
	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/ccbridge/ccbridge/mapping/lane004"
	"github.com/ccbridge/ccbridge/session"
)

// gatewayStatusWait bounds a worker's answer to a status request;
// gatewayBusWait the reads of the bus before a request is handed on.
const (
	gatewayStatusWait = 2 * time.Second
	gatewayBusWait    = 5 * time.Second
)

// serveGateway serves the API over the bus until ctx is done, and runs
// cfg's workers (--worker, --workers) on the bus: the API serves them as
// it serves every other worker there.
func serveGateway(ctx context.Context, cfg serveConfig, child func(dir string) session.Config, log *slog.Logger) (int, error) {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return 1, fmt.Errorf("--listen: %w", err)
	}
	defer ln.Close()
	b, err := control.DialBus(cfg.bus, "ccbridge gateway "+ln.Addr().String(), log)
	if err != nil {
		// Not reached at the start (a wrong address, credentials or CA):
		// a configuration error, code 2, as a worker on the bus says it.
		return 2, err
	}
	defer b.Close()
	hosted, _, err := startWorkers(cfg, baseSettings(cfg, log), child, log)
	if err != nil {
		return 2, err
	}
	defer stopWorkers(hosted)
	srv := newServeAPI(nil, cfg.tokens, log)
	srv.gw = control.NewGateway(b)
	srv.tlsProxy = cfg.insecureHTTP
	srv.maxBody = cfg.maxBody
	srv.requestWait = cfg.requestWait
	hs, served := httpServe(ln, srv.handler(), cfg.tls, log, "bus", cfg.bus.Redacted(), "workers", len(hosted), "auth", cfg.tokens != nil, "tls", cfg.tls != nil)
	code, serveErr := awaitServe(ctx, served, log)
	srv.shutdown()
	stopHTTP(hs, cfg.requestWait+5*time.Second, log)
	srv.wait()
	return code, serveErr
}

// busHandler routes the gateway's API.
func (s *serveAPI) busHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+serveWorkerPath+"/requests", s.busRequest)
	mux.HandleFunc("GET "+serveWorkerPath+"/stream", s.busStream)
	mux.HandleFunc("GET "+serveWorkerPath, s.busStatus)
	mux.HandleFunc("GET "+serveWorkersPath, s.busList)
	return s.guard(mux)
}

// busWorker authenticates the request and checks the bus is reachable:
// the worker's id, or "" when an answer was written.
func (s *serveAPI) busWorker(w http.ResponseWriter, r *http.Request) string {
	id := r.PathValue("workerId")
	tok, ok := s.authenticate(w, r, id)
	if !ok {
		return ""
	}
	if tok != nil && !tok.allows(id) {
		s.problem(w, http.StatusForbidden, id, lane004.CodeForbidden, "this token may not drive worker "+strconv.Quote(id))
		return ""
	}
	if !control.BusWorkerID(id) {
		s.problem(w, http.StatusNotFound, id, lane004.CodeWorkerUnavailable, "no worker "+strconv.Quote(id)+" (a worker id on the bus is 1 to 64 of A-Z a-z 0-9 _ -)")
		return ""
	}
	if !s.gw.Connected() {
		s.busDown(w, id)
		return ""
	}
	return id
}

// busDown answers 503: this gateway has lost the bus.
func (s *serveAPI) busDown(w http.ResponseWriter, id string) {
	p := &lane004.Problem{Code: lane004.CodeWorkerUnavailable, Message: "this gateway has lost the bus (NATS) and is reconnecting: retry, here or at another gateway"}
	body := lane004.AppendProblem(nil, id, p, time.Now())
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusServiceUnavailable, body)
}

// busFailed answers an error of the bus or the worker.
func (s *serveAPI) busFailed(w http.ResponseWriter, id string, err error) {
	switch {
	case errors.Is(err, control.ErrNoWorker):
		s.problem(w, http.StatusNotFound, id, lane004.CodeWorkerUnavailable, "no worker "+strconv.Quote(id)+" on the bus")
	case errors.Is(err, control.ErrWorkerGone):
		s.problem(w, http.StatusServiceUnavailable, id, lane004.CodeWorkerUnavailable, "worker "+strconv.Quote(id)+" is not connected to the bus; a retry of the same request_id after it is back runs it at most once")
	case errors.Is(err, control.ErrBusDown) || !s.gw.Connected():
		s.busDown(w, id)
	default:
		s.problem(w, http.StatusServiceUnavailable, id, lane004.CodeWorkerUnavailable, "the bus: "+err.Error())
	}
}

// busRequest is POST …/requests: the recorded receipt, else the worker's
// answer, else 202 after requestWait.
func (s *serveAPI) busRequest(w http.ResponseWriter, r *http.Request) {
	id := s.busWorker(w, r)
	if id == "" {
		return
	}
	body, tooBig, err := readBody(w, r, s.maxBody)
	switch {
	case tooBig:
		s.tooLarge(w, id)
		return
	case err != nil:
		s.problem(w, http.StatusBadRequest, id, lane004.CodeInvalidRequest, "reading the request body: "+err.Error())
		return
	}
	req, prob := lane004.Decode(body)
	switch {
	case prob != nil && prob.NoReply:
		s.problem(w, http.StatusBadRequest, id, lane004.CodeInvalidRequest, "the body is a worker event, not a request")
		return
	case prob != nil && !prob.HasID:
		receipt := lane004.AppendProblem(nil, id, prob, time.Now())
		writeJSON(w, receiptStatus(receipt), receipt)
		return
	case prob != nil:
		req.RequestID = prob.RequestID
	}
	// A request done before: its receipt, whether its worker is here.
	bctx, bcancel := context.WithTimeout(r.Context(), gatewayBusWait)
	receipt, err := s.gw.Receipt(bctx, id, req.RequestID)
	bcancel()
	if err != nil {
		s.busFailed(w, id, err)
		return
	}
	if receipt != nil {
		writeJSON(w, receiptStatus(receipt), receipt)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.requestWait)
	defer cancel()
	receipt, err = s.gw.Request(ctx, id, req.RequestID, body)
	switch {
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		s.busAccepted(w, r, id, req.RequestID, body)
	case r.Context().Err() != nil:
		// The client is gone; the worker goes on.
	case err != nil:
		s.busFailed(w, id, err)
	case receipt == nil:
		s.problem(w, http.StatusBadRequest, id, lane004.CodeInvalidRequest, "the body is a worker event, not a request")
	default:
		writeJSON(w, receiptStatus(receipt), receipt)
	}
}

// busAccepted answers a request the worker has not answered within
// --request-wait: 202 with the seq after which its receipt comes on the
// stream. That seq is read first, then the stream is searched for the
// receipt: one published by then is the answer (200), and one not yet
// published will come after the seq read.
func (s *serveAPI) busAccepted(w http.ResponseWriter, r *http.Request, id, requestID string, body []byte) {
	ctx, cancel := context.WithTimeout(r.Context(), gatewayBusWait)
	defer cancel()
	receipt, latest, err := s.gw.Published(ctx, id, requestID)
	switch {
	case err != nil:
		s.busFailed(w, id, err)
	case receipt != nil:
		writeJSON(w, receiptStatus(receipt), receipt)
	default:
		s.accepted(w, body, latest)
	}
}

// busStatusObj appends a worker's status object, as serveWorker's:
// its seqs from its stream, its status from the worker ("unreachable"
// when it does not answer).
func (s *serveAPI) busStatusObj(ctx context.Context, dst []byte, id string) ([]byte, error) {
	oldest, latest, err := s.gw.Seqs(ctx, id)
	if err != nil {
		return dst, err
	}
	sctx, cancel := context.WithTimeout(ctx, gatewayStatusWait)
	st, err := s.gw.Status(sctx, id)
	cancel()
	if err != nil || !gjson.ValidBytes(st) || !gjson.ParseBytes(st).IsObject() {
		st = []byte(`{"state":"unreachable"}`)
	}
	return jsonw.NewObj(dst).Str("worker_id", id).Int("latest_seq", int64(latest)).
		Int("oldest_seq", int64(oldest)).Raw("status", string(st)).End(), nil
}

// busStatus is GET …/{workerId}.
func (s *serveAPI) busStatus(w http.ResponseWriter, r *http.Request) {
	id := s.busWorker(w, r)
	if id == "" {
		return
	}
	b, err := s.busStatusObj(r.Context(), nil, id)
	if err != nil {
		s.busFailed(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// busList is GET …/workers: the live workers (presence) the token may
// drive.
func (s *serveAPI) busList(w http.ResponseWriter, r *http.Request) {
	tok, ok := s.authenticate(w, r, "")
	if !ok {
		return
	}
	if !s.gw.Connected() {
		s.busDown(w, "")
		return
	}
	ids, err := s.gw.Workers(r.Context())
	if err != nil {
		s.busFailed(w, "", err)
		return
	}
	b := []byte(`{"workers":[`)
	n := 0
	for _, id := range ids {
		if tok != nil && !tok.allows(id) {
			continue
		}
		mark := len(b)
		if n > 0 {
			b = append(b, ',')
		}
		if b, err = s.busStatusObj(r.Context(), b, id); err != nil {
			b = b[:mark] // its stream is gone: not a worker any more
			continue
		}
		n++
	}
	writeJSON(w, http.StatusOK, append(b, "]}"...))
}

// busStream is GET …/stream: the worker's stream after the cursor as
// server-sent events, as serveAPI.stream writes a hosted worker's. A
// stream ends when this gateway loses the bus; the client resumes from
// its Last-Event-ID at any gateway.
func (s *serveAPI) busStream(w http.ResponseWriter, r *http.Request) {
	id := s.busWorker(w, r)
	if id == "" {
		return
	}
	cursor, given, err := streamCursor(r)
	if err != nil {
		s.problem(w, http.StatusBadRequest, id, lane004.CodeInvalidRequest, err.Error())
		return
	}
	_, latest, err := s.gw.Seqs(r.Context(), id)
	if err != nil {
		s.busFailed(w, id, err)
		return
	}
	if !given {
		cursor = latest
	}
	out := startStream(w, s.writeTimeout)
	if out == nil {
		return
	}
	defer out.deadline()

	ended, err := s.relay(r.Context(), out, id, func(ctx context.Context, add func(uint64, []byte) bool, flush func() bool) error {
		return s.gw.Follow(ctx, id, cursor, add, flush)
	})
	if ended && err != nil {
		s.log.Info("stream ended: the bus", "worker", id, "err", err)
		out.comment("the gateway lost the bus: resume from your Last-Event-ID, here or at another gateway")
	}
}
