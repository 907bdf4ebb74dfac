package control

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// busDedupe is the dedupe store of lanes 000 and 001 on the bus
// (docs/protocol/bus.md): one key of the ccbridge_dedupe bucket per
// request, under the worker's id, so that a retry is a duplicate whatever
// host the worker runs on after a restart. Begin claims a key by Create
// (one writer wins); Finish writes the outcome over the claim with the
// claim's revision and a TTL of the lane's window, after which the
// server removes it. A claim in flight never expires (the lane ends it);
// one left by a process that stopped is recovered as --state-dir
// recovers it: completed with internal_error, outcome unknown.
//
// MaxKeys does not apply: at the rates ccbridge is sized for (MaxRate000)
// the TTL bounds the bucket.
type busDedupe struct {
	b        *Bus
	kv       jetstream.KeyValue
	cfg      StoreConfig
	worker   string
	instance string

	held busClaims[busDedupeClaim] // the claims this process holds
}

// busDedupeClaim is a claim this process holds: its revision, and the
// outcome that could not be written over it yet (the bus was away), which
// a retry gets and writes again.
type busDedupeClaim struct {
	rev     uint64
	pending *Outcome
}

// openBusDedupe opens worker's dedupe store in the bucket (made by the
// first worker that finds it missing).
func openBusDedupe(b *Bus, kv jetstream.KeyValue, worker string, cfg StoreConfig) *busDedupe {
	return &busDedupe{b: b, kv: kv, cfg: cfg.withDefaults(), worker: worker, instance: nuid.Next()}
}

// key is k's key in the bucket: the worker, the lane, then each field as
// a token of its own (an underscore, then base64url: any bytes, and an
// empty field still a token).
func (s *busDedupe) key(k Key) string {
	b := make([]byte, 0, 96)
	b = append(b, s.worker...)
	for _, f := range [...]string{k.Lane, k.Team, k.SessionID, k.AgentID, k.RequestID} {
		b = append(b, '.', '_')
		b = append(b, busKeyPart(f)...)
	}
	return string(b)
}

func (s *busDedupe) Begin(k Key, now time.Time) (Entry, bool, error) {
	key := s.key(k)
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	for range 3 {
		rev, e, err := s.b.claim(ctx, s.kv, key, busInFlight(s.instance))
		switch {
		case err != nil:
			return Entry{}, false, err
		case e == nil:
			s.held.hold(key, busDedupeClaim{rev, nil})
			return Entry{}, true, nil
		}
		if owner, inFlight := busClaim(e.Value()); inFlight {
			if owner == s.instance {
				c, _ := s.held.get(key)
				if c.pending == nil {
					s.held.hold(key, busDedupeClaim{e.Revision(), nil})
					return Entry{InFlight: true, Since: e.Created()}, false, nil
				}
				// Done, its outcome not yet on the bus: write it now.
				o := *c.pending
				if err := s.write(ctx, key, o, e.Revision()); err == nil {
					s.held.drop(key)
				}
				return Entry{Outcome: o, Since: o.At}, false, nil
			}
			// Left in flight by a process that stopped (one worker id is
			// one process: Bus.alone): whether it reached the worker is
			// not known, so it counts as done and a retry never runs it.
			o := Outcome{Result: recoveredResult, Detail: recoveredDetail, At: now}
			switch err := s.write(ctx, key, o, e.Revision()); {
			case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
				continue
			case err != nil:
				return Entry{}, false, s.b.busErr(err)
			}
			return Entry{Outcome: o, Since: now}, false, nil
		}
		o, ok := decodeBusOutcome(e.Value())
		if !ok {
			return Entry{}, false, fmt.Errorf("control store: the bus holds a value for %s that is not an outcome (%.40q)", key, e.Value())
		}
		if prev := (Entry{Outcome: o, Since: o.At}); !s.cfg.expired(prev, now) {
			return prev, false, nil
		}
		// Past the window (the server removes it within a second or so
		// of its TTL): judged anew.
		rev, err = s.kv.Update(ctx, key, busInFlight(s.instance), e.Revision())
		switch {
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue
		case err != nil:
			return Entry{}, false, s.b.busErr(err)
		}
		s.held.hold(key, busDedupeClaim{rev, nil})
		return Entry{}, true, nil
	}
	return Entry{}, false, errClaimChanged
}

// Finish writes the outcome over the claim this process holds, to live
// the lane's window. When the bus is away, the outcome is kept with the
// claim: a retry gets it, and writes it then.
func (s *busDedupe) Finish(k Key, o Outcome) error {
	key := s.key(k)
	c, ok := s.held.get(key)
	if !ok {
		return ErrNoEntry
	}
	o.At = s.cfg.finishTime(o)
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	if err := s.write(ctx, key, o, c.rev); err != nil {
		s.held.hold(key, busDedupeClaim{c.rev, &o})
		return s.b.busErr(err)
	}
	s.held.drop(key)
	return nil
}

// write puts outcome o at key over revision rev, with the window as its
// TTL (a KV Update takes none: this is its publish, with a TTL).
func (s *busDedupe) write(ctx context.Context, key string, o Outcome, rev uint64) error {
	_, err := s.b.js.Publish(ctx, "$KV."+BusDedupe+"."+key, encodeBusOutcome(o),
		jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(max(s.cfg.TTL, time.Second)))
	var api *jetstream.APIError
	if errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
	}
	return err
}

// encodeBusOutcome is an outcome as the bucket keeps it: a JSON object.
func encodeBusOutcome(o Outcome) []byte {
	return jsonw.NewObj(nil).Str("result", o.Result).Str("detail", o.Detail).Str("at", o.At.UTC().Format(time.RFC3339Nano)).End()
}

// decodeBusOutcome reads an outcome encodeBusOutcome wrote.
func decodeBusOutcome(v []byte) (Outcome, bool) {
	if !gjson.ValidBytes(v) {
		return Outcome{}, false
	}
	r := gjson.GetManyBytes(v, "result", "detail", "at")
	at, err := time.Parse(time.RFC3339Nano, r[2].Str)
	if err != nil {
		return Outcome{}, false
	}
	return Outcome{Result: r[0].Str, Detail: r[1].Str, At: at}, true
}

func (s *busDedupe) Release(k Key) error {
	key := s.key(k)
	c, ok := s.held.get(key)
	if !ok {
		return nil
	}
	s.held.drop(key)
	ctx, cancel := context.WithTimeout(context.Background(), busTimeout)
	defer cancel()
	return s.b.busErr(s.kv.Delete(ctx, key, jetstream.LastRevision(c.rev)))
}

func (s *busDedupe) NextSeq(string) (uint64, error) {
	return 0, errors.New("control store: the bus keeps no sequence numbers for lanes 000 and 001")
}

func (s *busDedupe) Durable() bool { return true }

// Close forgets the claims; the bus is its owner's to close.
func (s *busDedupe) Close() error { return nil }
