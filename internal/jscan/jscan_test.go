package jscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

type member struct {
	key string
	val gjson.Result
}

func collect(obj string) []member {
	var ms []member
	ForEach(obj, func(k string, v gjson.Result) bool {
		ms = append(ms, member{k, v})
		return true
	})
	return ms
}

func gjsonMembers(obj string) []member {
	var ms []member
	gjson.Parse(obj).ForEach(func(k, v gjson.Result) bool {
		ms = append(ms, member{k.Str, v})
		return true
	})
	return ms
}

func same(a, b []member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i].val, b[i].val
		if a[i].key != b[i].key || x.Type != y.Type || x.Raw != y.Raw || x.Str != y.Str || x.Num != y.Num {
			return false
		}
	}
	return true
}

func TestForEachMatchesGJSON(t *testing.T) {
	for _, obj := range []string{
		`{}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"he said \"hi\" \\ ok"}},"session_id":"s","parent_tool_use_id":null,"n":-1.5e3,"t":true,"f":false,"a":[1,{"x":"]}"}]}`,
		` { "a" : "b" , "c" : [ ] } `,
		`{"k\"ey":"v\u00e9","e":"\\\\"}`,
		`{"deep":{"a":{"b":{"c":["\"}"]}}},"after":1}`,
	} {
		if got, want := collect(obj), gjsonMembers(obj); !same(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", obj, got, want)
		}
	}
}

func TestForEachStops(t *testing.T) {
	n := 0
	ForEach(`{"a":1,"b":2,"c":3}`, func(string, gjson.Result) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("called %d times after returning false, want 2", n)
	}
}

func FuzzForEach(f *testing.F) {
	f.Add(`{"a":"b\"c","d":[1,{"e":null}],"f":-2}`)
	f.Add(`{"type":"x","s":"\\"}`)
	f.Fuzz(func(t *testing.T, obj string) {
		got := collect(obj) // must not panic on anything
		if !gjson.Valid(obj) || !gjson.Parse(obj).IsObject() {
			return
		}
		if want := gjsonMembers(obj); !same(got, want) {
			t.Fatalf("%q:\n got %+v\nwant %+v", obj, got, want)
		}
	})
}

// FuzzGetElements: on valid JSON, Get is gjson.Get for plain keys and
// Elements visits what gjson's ForEach visits on an array.
func FuzzGetElements(f *testing.F) {
	f.Add(`{"a":"b\"c","d":[1,{"e":null}],"f":-2,"a":3}`, "a")
	f.Add(`[{"type":"text","text":"x\\"}, 2 ,"s",[]]`, "type")
	f.Add(`{"k\u0065y":1}`, "key")
	f.Fuzz(func(t *testing.T, js, key string) {
		got := Get(js, key) // must not panic on anything
		var elems []gjson.Result
		Elements(js, func(v gjson.Result) bool { elems = append(elems, v); return true })
		if !gjson.Valid(js) || strings.ContainsAny(key, ".*?|#@\\!{}[]()\"=<>%,:") || key == "" {
			return
		}
		root := gjson.Parse(js)
		if root.IsObject() {
			want := gjson.Get(js, key)
			if got.Type != want.Type || got.Raw != want.Raw || got.Str != want.Str || got.Num != want.Num {
				t.Fatalf("Get(%q, %q) = %+v, want %+v", js, key, got, want)
			}
		}
		if root.IsArray() {
			var want []gjson.Result
			root.ForEach(func(_, v gjson.Result) bool { want = append(want, v); return true })
			if len(elems) != len(want) {
				t.Fatalf("Elements(%q): %d values, want %d", js, len(elems), len(want))
			}
			for i := range want {
				if elems[i].Type != want[i].Type || elems[i].Raw != want[i].Raw || elems[i].Str != want[i].Str {
					t.Fatalf("Elements(%q)[%d] = %+v, want %+v", js, i, elems[i], want[i])
				}
			}
		}
	})
}

func BenchmarkForEach(b *testing.B) {
	obj := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum "}},"session_id":"5c3bb572-859f-4ecf-9616-2b9d21f1b011","parent_tool_use_id":null,"uuid":"6ee59b9f-a072-407b-9bd6-a8195be95338","api_message_id":"msg_01perf"}`
	b.Run("jscan", func(b *testing.B) {
		for b.Loop() {
			ForEach(obj, func(string, gjson.Result) bool { return true })
		}
	})
	b.Run("gjson", func(b *testing.B) {
		for b.Loop() {
			gjson.Parse(obj).ForEach(func(gjson.Result, gjson.Result) bool { return true })
		}
	})
}

func TestWalkRaw(t *testing.T) {
	var keys, raws []string
	Walk(`{"a" : "x\ny" , "b\u0063":[1, {"c":2}],"d":null}`, func(k, raw string) bool {
		keys = append(keys, k)
		raws = append(raws, raw)
		return k != "bc"
	})
	if strings.Join(keys, "|") != "a|bc" || strings.Join(raws, "|") != `"x\ny"|[1, {"c":2}]` {
		t.Fatalf("keys %q raws %q", keys, raws)
	}
}

func TestDuplicateKey(t *testing.T) {
	many := "{"
	for i := range 40 {
		many += `"k` + strings.Repeat("x", i) + `":1,`
	}
	for _, c := range []struct {
		v, dup string
	}{
		{`{}`, ""},
		{`{"a":1,"b":{"a":2},"c":[{"a":3}]}`, ""},
		{`{"type":"user_message","text":"x","type":"control_request_forward"}`, "type"},
		{`{"a":1,"\u0061":2}`, "a"},
		{`{"a":{"b":[1,{"c":1,"c":2}]}}`, "a.b.1.c"},
		{`[{"x":1},{"y":1,"y":2}]`, "1.y"},
		{` "s" `, ""},
		{many + `"kxxx":2}`, "kxxx"},
		{many + `"new":2}`, ""},
	} {
		dup, found := DuplicateKey(c.v)
		if dup != c.dup || found != (c.dup != "") {
			t.Errorf("%.60s: %q %v, want %q", c.v, dup, found, c.dup)
		}
	}
}

// dupRef is DuplicateKey's reference: encoding/json's tokens, one set of
// names per open object.
func dupRef(v string) bool {
	d := json.NewDecoder(strings.NewReader(v))
	type frame struct {
		obj   bool
		key   bool // the next string token is a name
		names map[string]bool
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err != nil {
			return false
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.obj && top.key {
			if top.names[s] {
				return true
			}
			top.names[s] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, key: true, names: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return false
		}
		if top := stack[len(stack)-1]; top.obj {
			top.key = true
		}
	}
}

func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":1},"c":[{"d":1,"d":2}]}`, `[1,{"x":{}}]`, `{"\u0061":1,"a":2}`, `{"a":[{"a":1}],"b":{"a":1}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !json.Valid([]byte(v)) || !gjson.Valid(v) {
			return
		}
		if _, found := DuplicateKey(v); found != dupRef(v) {
			t.Fatalf("%q: DuplicateKey %v, encoding/json %v", v, found, !found)
		}
	})
}
