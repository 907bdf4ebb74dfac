package control

import (
	"encoding/binary"
	"errors"
	"time"
)

// Key names one request in the idempotency store. For lane 000 every field
// is set; a lane that dedupes on fewer fields leaves the others empty.
type Key struct{ Lane, Team, SessionID, AgentID, RequestID string }

// Outcome is a completed request's result, kept for its retries.
type Outcome struct {
	Result string
	Detail string
	At     time.Time
}

// Entry is what the store holds for a key: in flight (Begin was called,
// Finish not yet) or completed with its Outcome. Since is the time of its
// last change (Begin's now, or the Outcome's At).
type Entry struct {
	InFlight bool
	Outcome  Outcome // when !InFlight
	Since    time.Time
}

// Store is the idempotency store. Every method is safe for concurrent use.
//
// Rules shared by both implementations:
//   - A completed entry expires when more than TTL has passed since its last
//     change (now - Since > TTL); an expired entry counts as absent and is
//     removed lazily (a few per Begin, oldest first, never a full scan).
//   - An in-flight entry never expires and is never evicted: the lane always
//     ends it with Finish or Release (its own timeout included), and dropping
//     it early would let a retry inject a second time while the first is
//     still pending.
//   - At most MaxKeys entries are held. When Begin must insert and the store
//     is full, the completed entry changed longest ago is evicted; when every
//     entry is in flight, Begin returns ErrStoreFull (the lane answers busy).
type Store interface {
	// Begin atomically looks k up and, when absent or expired, inserts an
	// in-flight entry: fresh reports the insert; otherwise prev is what is there.
	Begin(k Key, now time.Time) (prev Entry, fresh bool, err error)
	// Finish records k's outcome; it stays until the TTL passes.
	// The entry's Since becomes o.At (the store's clock when o.At is zero).
	// Finish of a key the store does not hold returns ErrNoEntry.
	Finish(k Key, o Outcome) error
	// Release removes k (a failure with no side effect: a retry is judged anew).
	// Releasing an absent key is not an error.
	Release(k Key) error
	// NextSeq returns the lane's next sequence number (1, 2, …), durable with the store.
	NextSeq(lane string) (uint64, error)
	Durable() bool
	Close() error
}

// StoreConfig configures a Store. Zero fields take the defaults.
type StoreConfig struct {
	TTL     time.Duration // entries older than this are gone (10 min for lane 000)
	MaxKeys int           // size bound; eviction documented (oldest completed first)
	// Now is the store's clock, used only where no time is passed in:
	// Finish with a zero Outcome.At, and OpenStore's recovery of entries
	// left in flight. nil: time.Now.
	Now func() time.Time
	// Events: the durable store also keeps an event log (lane 004's),
	// whose receipts are committed with their entries in one transaction
	// (EventLogConfig.Store). An event log file an earlier version kept
	// beside the store is read in once and removed. The memory store
	// ignores it.
	Events bool
}

const (
	// DefaultTTL is lane 000's dedupe window.
	DefaultTTL = 10 * time.Minute
	// DefaultMaxKeys bounds the store when StoreConfig.MaxKeys is zero.
	DefaultMaxKeys = 1 << 16
	// sweepBatch is how many expired entries one Begin removes at most: the
	// work stays bounded per call and, since each Begin inserts at most
	// one entry, the backlog still drains.
	sweepBatch = 16
)

var (
	// ErrStoreFull: MaxKeys entries are held and every one is in flight.
	ErrStoreFull = errors.New("control store: full, every entry is in flight")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("control store: closed")
	// ErrNoEntry: Finish of a key the store does not hold.
	ErrNoEntry = errors.New("control store: no entry for this key")
)

func (c StoreConfig) withDefaults() StoreConfig {
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// expired reports whether e counts as absent at now.
func (c StoreConfig) expired(e Entry, now time.Time) bool {
	return !e.InFlight && now.Sub(e.Since) > c.TTL
}

// appendKey appends k's encoding: each field as a uvarint length and its
// bytes, so no two keys encode alike whatever bytes the fields hold.
func appendKey(dst []byte, k Key) []byte {
	for _, s := range [...]string{k.Lane, k.Team, k.SessionID, k.AgentID, k.RequestID} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

// finishTime is the Since a Finish gives an entry.
func (c StoreConfig) finishTime(o Outcome) time.Time {
	if o.At.IsZero() {
		return c.Now()
	}
	return o.At
}
