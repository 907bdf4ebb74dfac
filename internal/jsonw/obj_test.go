package jsonw

import (
	"encoding/json"
	"testing"
)

func TestObjMembers(t *testing.T) {
	for _, c := range []struct {
		name string
		obj  *Obj
		want string
	}{
		{"empty", NewObj(nil), `{}`},
		{"Str", NewObj(nil).Str("a", "b"), `{"a":"b"}`},
		{"Str empty", NewObj(nil).Str("a", ""), `{"a":""}`},
		{"StrOrNull", NewObj(nil).StrOrNull("a", "x"), `{"a":"x"}`},
		{"StrOrNull empty", NewObj(nil).StrOrNull("a", ""), `{"a":null}`},
		{"Raw object", NewObj(nil).Raw("a", `{"b":[1,true,null]}`), `{"a":{"b":[1,true,null]}}`},
		{"Raw number", NewObj(nil).Raw("a", `-1.5e3`), `{"a":-1.5e3}`},
		{"Raw string", NewObj(nil).Raw("a", `"x\"y"`), `{"a":"x\"y"}`},
		{"Raw empty", NewObj(nil).Raw("a", ""), `{"a":null}`},
		{"Raw drops line breaks", NewObj(nil).Raw("a", "{\n  \"b\": 1\r\n}"), `{"a":{  "b": 1}}`},
		{"Int", NewObj(nil).Int("a", 0).Int("b", -42).Int("c", 9223372036854775807), `{"a":0,"b":-42,"c":9223372036854775807}`},
		{"Bool", NewObj(nil).Bool("t", true).Bool("f", false), `{"t":true,"f":false}`},
		{"Strings", NewObj(nil).Strings("a", []string{"x", "", "y\"z"}), `{"a":["x","","y\"z"]}`},
		{"Strings empty", NewObj(nil).Strings("a", []string{}).Strings("b", nil), `{"a":[],"b":[]}`},
		{"order as given", NewObj(nil).Str("z", "1").Int("a", 2).Raw("m", "").Bool("b", true).StrOrNull("y", "").Strings("c", []string{"d"}),
			`{"z":"1","a":2,"m":null,"b":true,"y":null,"c":["d"]}`},
		{"nested", NewObj(nil).Raw("thread", NewObj(nil).Str("id", "t").StrOrNull("model", "").String()).Str("after", "x"),
			`{"thread":{"id":"t","model":null},"after":"x"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.obj.String()
			if got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

func TestObjEscapes(t *testing.T) {
	for _, c := range []struct {
		name string
		obj  *Obj
		want string
	}{
		{"quotes and backslashes", NewObj(nil).Str(`k"\`, `v"\`), `{"k\"\\":"v\"\\"}`},
		{"control characters", NewObj(nil).Str("a", "l1\nl2\r\t\b\f\x00\x1f"), `{"a":"l1\nl2\r\t\b\f\u0000\u001f"}`},
		{"html and separators", NewObj(nil).Str("a", "<b>&\u2028\u2029"), `{"a":"<b>&\u2028\u2029"}`},
		{"non-ASCII as is", NewObj(nil).Str("é", "naïve 😀"), `{"é":"naïve 😀"}`},
		{"invalid UTF-8 in a value", NewObj(nil).Str("a", "x\xffy\xc3"), `{"a":"x\ufffdy\ufffd"}`},
		{"invalid UTF-8 in a key", NewObj(nil).Int("k\xfe", 1), `{"k\ufffd":1}`},
		{"StrOrNull escapes", NewObj(nil).StrOrNull("a", "\"\n"), `{"a":"\"\n"}`},
		{"Strings escape", NewObj(nil).Strings("a", []string{"\t", "\xff"}), `{"a":["\t","\ufffd"]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.obj.String()
			if got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not valid JSON: %s", got)
			}
		})
	}
}

// TestObjAfterPrefix: an object started at the end of a buffer that
// already holds bytes: its first member has no comma, String returns only
// the object, End the whole buffer.
func TestObjAfterPrefix(t *testing.T) {
	prefix := []byte(`[{"x":1},`)
	o := NewObj(prefix).Str("a", "b").Int("n", 1)
	if got, want := o.String(), `{"a":"b","n":1}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	end := NewObj([]byte(`{"k":`)).Bool("v", true).End()
	if got, want := string(end), `{"k":{"v":true}`; got != want {
		t.Errorf("End() = %s, want %s", got, want)
	}
	// The prefix is not changed, and an empty object after it is {}.
	if got := NewObj(prefix).String(); got != "{}" {
		t.Errorf("empty object after a prefix: %s", got)
	}
	if string(prefix) != `[{"x":1},` {
		t.Errorf("prefix changed: %s", prefix)
	}
	// Building an array of objects in one buffer, as lane004.Turns.Append does.
	b := []byte{'['}
	b = NewObj(b).Str("id", "1").End()
	b = append(b, ',')
	b = NewObj(b).Str("id", "2").End()
	b = append(b, ']')
	if got, want := string(b), `[{"id":"1"},{"id":"2"}]`; got != want {
		t.Errorf("array %s, want %s", got, want)
	}
}

// TestObjChains: every adder returns the same object.
func TestObjChains(t *testing.T) {
	o := NewObj(nil)
	for name, got := range map[string]*Obj{
		"Str": o.Str("a", ""), "StrOrNull": o.StrOrNull("b", ""), "Raw": o.Raw("c", ""),
		"Int": o.Int("d", 0), "Bool": o.Bool("e", false), "Strings": o.Strings("f", nil),
	} {
		if got != o {
			t.Errorf("%s returned another object", name)
		}
	}
}
