package jsonrpc

import (
	"cmp"
	"iter"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/jsonw"
)

// IDState says what a Pending table knows of an id.
type IDState uint8

const (
	IDUnknown IDState = iota // never issued by the table (or not in the form it issues)
	IDOpen                   // issued and awaiting its answer
	IDSettled                // issued earlier and no longer open: taken or removed
)

func (s IDState) String() string {
	switch s {
	case IDOpen:
		return "open"
	case IDSettled:
		return "settled"
	}
	return "unknown"
}

// Pending is the table of requests one side sent its peer and awaits
// answers for. It issues the ids, 1, 2, 3, … in order, and keeps a value
// for each open one. Every id is raw JSON, as Message.ID has it and as
// AppendRequest takes it: a JSON number (7) when the table has no prefix,
// else a JSON string of the prefix and the number ("ui-7"). An answer
// matches only in the form issued: "7" does not match 7, nor 7 "ui-7".
//
// Because the ids only grow, the table tells an id it issued and no longer
// holds (IDSettled) from one it never issued (IDUnknown) without keeping
// the settled ids. The zero Pending is an empty table of number ids. It is
// not safe for concurrent use: one goroutine (a dialect's event loop)
// owns it.
type Pending[V any] struct {
	prefix string
	last   uint64            // the last id issued; ids run 1..last
	open   []pendingEntry[V] // in issue order, so sorted by n
}

type pendingEntry[V any] struct {
	n uint64
	v V
}

// NewPending returns an empty table. With prefix "" it issues JSON number
// ids; otherwise JSON string ids prefix+"1", prefix+"2", ….
func NewPending[V any](prefix string) *Pending[V] {
	return &Pending[V]{prefix: prefix}
}

// Issue opens the next id for a request with value v and returns the id.
func (t *Pending[V]) Issue(v V) (id string) {
	t.last++
	t.open = append(t.open, pendingEntry[V]{t.last, v})
	return t.format(t.last)
}

// Get returns the value of an open id, and the id's state.
func (t *Pending[V]) Get(id string) (V, IDState) {
	i, state := t.find(id)
	if state != IDOpen {
		var zero V
		return zero, state
	}
	return t.open[i].v, IDOpen
}

// Take settles an open id and returns its value; for an id that is not
// open it only reports the state.
func (t *Pending[V]) Take(id string) (V, IDState) {
	i, state := t.find(id)
	if state != IDOpen {
		var zero V
		return zero, state
	}
	v := t.open[i].v
	t.open = slices.Delete(t.open, i, i+1)
	return v, IDOpen
}

// Remove settles every open id whose value match accepts (a session's
// requests when its turn ends) and returns their ids in issue order, for
// the peer to be told (a $/cancel_request each, say).
func (t *Pending[V]) Remove(match func(V) bool) (ids []string) {
	kept := t.open[:0]
	for _, e := range t.open {
		if match(e.v) {
			ids = append(ids, t.format(e.n))
		} else {
			kept = append(kept, e)
		}
	}
	clear(t.open[len(kept):])
	t.open = kept
	return ids
}

// All yields the open ids and their values in issue order. The table must
// not be changed during the iteration.
func (t *Pending[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		for _, e := range t.open {
			if !yield(t.format(e.n), e.v) {
				return
			}
		}
	}
}

// Len returns how many ids are open.
func (t *Pending[V]) Len() int { return len(t.open) }

func (t *Pending[V]) format(n uint64) string {
	if t.prefix == "" {
		return strconv.FormatUint(n, 10)
	}
	return string(jsonw.String(make([]byte, 0, len(t.prefix)+22), t.prefix+strconv.FormatUint(n, 10)))
}

// find returns the index in open of a raw id, and its state.
func (t *Pending[V]) find(id string) (int, IDState) {
	n, ok := t.number(id)
	if !ok || n > t.last {
		return 0, IDUnknown
	}
	i, found := slices.BinarySearchFunc(t.open, n, func(e pendingEntry[V], n uint64) int { return cmp.Compare(e.n, n) })
	if !found {
		return 0, IDSettled
	}
	return i, IDOpen
}

// number returns the counter of a raw id in the form the table issues,
// and false for any other id.
func (t *Pending[V]) number(id string) (uint64, bool) {
	s := id
	if t.prefix != "" {
		r := gjson.Parse(id)
		if r.Type != gjson.String {
			return 0, false
		}
		var ok bool
		if s, ok = strings.CutPrefix(r.Str, t.prefix); !ok {
			return 0, false
		}
	}
	if s == "" || s[0] == '0' {
		return 0, false // ids start at 1 and have no leading zeros
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
