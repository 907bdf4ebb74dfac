package jsonrpc

import (
	"fmt"
	"slices"
	"testing"
)

func TestPendingNumberIDs(t *testing.T) {
	var p Pending[string] // the zero table: number ids, as acp uses them
	if id := p.Issue("a"); id != "1" {
		t.Fatalf("first id %s, want 1", id)
	}
	p.Issue("b")
	p.Issue("c")
	if p.Len() != 3 {
		t.Fatalf("Len %d, want 3", p.Len())
	}
	if v, st := p.Get("2"); v != "b" || st != IDOpen {
		t.Errorf("Get(2) = %q %v, want b open", v, st)
	}
	if v, st := p.Take("2"); v != "b" || st != IDOpen {
		t.Errorf("Take(2) = %q %v, want b open", v, st)
	}
	if v, st := p.Take("2"); v != "" || st != IDSettled {
		t.Errorf("Take(2) again = %q %v, want settled", v, st)
	}
	if _, st := p.Get("2"); st != IDSettled {
		t.Errorf("Get(2) after Take = %v, want settled", st)
	}
	for _, id := range []string{
		"4",       // not issued yet
		"0", "-1", // never issued
		`"1"`, `"x"`, // a string where the table issues numbers
		"1.0", "1e0", "01", "+1", // not the form issued
		"18446744073709551616", // beyond uint64
		"", "null",
	} {
		if _, st := p.Take(id); st != IDUnknown {
			t.Errorf("Take(%s) = %v, want unknown", id, st)
		}
	}
	if p.Len() != 2 {
		t.Errorf("Len %d after the unknown ids, want 2", p.Len())
	}
	if id := p.Issue("d"); id != "4" {
		t.Errorf("next id %s, want 4 (ids are not reused)", id)
	}
}

func TestPendingStringIDs(t *testing.T) {
	p := NewPending[int]("ui-") // string ids, as rpc uses them
	for i := 1; i <= 3; i++ {
		if id, want := p.Issue(i*10), fmt.Sprintf(`"ui-%d"`, i); id != want {
			t.Fatalf("id %s, want %s", id, want)
		}
	}
	if v, st := p.Take(`"ui-1"`); v != 10 || st != IDOpen {
		t.Errorf(`Take("ui-1") = %d %v, want 10 open`, v, st)
	}
	if _, st := p.Take(`"ui-1"`); st != IDSettled {
		t.Errorf(`Take("ui-1") again = %v, want settled`, st)
	}
	// A string with escapes is matched by its value.
	if v, st := p.Get(`"ui\u002d2"`); v != 20 || st != IDOpen {
		t.Errorf(`Get("ui\u002d2") = %d %v, want 20 open`, v, st)
	}
	for _, id := range []string{
		`"ui-4"`, `"ui-0"`, `"ui-02"`, `"ui--1"`, // never issued, or not the form issued
		`"ux-1"`, `"ui-"`, `"1"`, `""`, // not the prefix, or no number
		"1", "2", // numbers where the table issues strings
		"", "null",
	} {
		if _, st := p.Take(id); st != IDUnknown {
			t.Errorf("Take(%s) = %v, want unknown", id, st)
		}
	}
	if p.Len() != 2 {
		t.Errorf("Len %d, want 2", p.Len())
	}
}

func TestPendingPrefixEscaped(t *testing.T) {
	p := NewPending[bool](`a"b-`)
	id := p.Issue(true)
	if id != `"a\"b-1"` {
		t.Fatalf("id %s", id)
	}
	if _, st := p.Take(id); st != IDOpen {
		t.Errorf("Take(%s) = %v, want open", id, st)
	}
}

func TestPendingRemoveAndAll(t *testing.T) {
	type req struct {
		session string
		n       int
	}
	var p Pending[req]
	for i, s := range []string{"s1", "s2", "s1", "s2", "s1"} {
		p.Issue(req{s, i + 1})
	}
	p.Take("3")
	ids := p.Remove(func(r req) bool { return r.session == "s1" })
	if !slices.Equal(ids, []string{"1", "5"}) {
		t.Errorf("removed %q, want [1 5] (3 was settled already)", ids)
	}
	for _, id := range []string{"1", "3", "5"} {
		if _, st := p.Get(id); st != IDSettled {
			t.Errorf("Get(%s) = %v after Remove, want settled", id, st)
		}
	}
	if ids := p.Remove(func(r req) bool { return r.session == "s3" }); ids != nil {
		t.Errorf("removed %q, want none", ids)
	}
	var got []string
	for id, r := range p.All() {
		got = append(got, fmt.Sprintf("%s:%s/%d", id, r.session, r.n))
	}
	if want := []string{"2:s2/2", "4:s2/4"}; !slices.Equal(got, want) {
		t.Errorf("All = %q, want %q", got, want)
	}
	for range p.All() {
		break // stopping early is allowed
	}
	if p.Len() != 2 {
		t.Errorf("Len %d, want 2", p.Len())
	}
}

func ExamplePending() {
	p := NewPending[string]("ui-")
	a := p.Issue("confirm Bash")
	b := p.Issue("pick an answer")
	fmt.Println(a, b)

	v, st := p.Take(a)
	fmt.Println(v, st == IDOpen)
	_, st = p.Take(a)
	fmt.Println(st == IDSettled)
	_, st = p.Take(`"ui-9"`)
	fmt.Println(st == IDUnknown)

	fmt.Println(p.Remove(func(string) bool { return true }))
	// Output:
	// "ui-1" "ui-2"
	// confirm Bash true
	// true
	// true
	// ["ui-2"]
}
