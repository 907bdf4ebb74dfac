package jsonw

// Obj writes one JSON object, member by member in the order given, onto a
// buffer: for objects whose members are known only as they are filled in
// (lane 004's responses and event params, which the adapter fills from
// the session's state). Strings are escaped (invalid UTF-8 replaced);
// raw members are copied as they are and must be valid JSON.
type Obj struct {
	b     []byte
	start int
}

// NewObj starts an object at the end of dst.
func NewObj(dst []byte) *Obj {
	o := &Obj{b: dst, start: len(dst)}
	o.b = append(o.b, '{')
	return o
}

func (o *Obj) key(k string) {
	if len(o.b) > o.start+1 {
		o.b = append(o.b, ',')
	}
	o.b = String(o.b, k)
	o.b = append(o.b, ':')
}

// Str adds a string member.
func (o *Obj) Str(k, v string) *Obj {
	o.key(k)
	o.b = String(o.b, v)
	return o
}

// StrOrNull adds a string member, null when v is "".
func (o *Obj) StrOrNull(k, v string) *Obj {
	if v == "" {
		return o.Raw(k, "")
	}
	return o.Str(k, v)
}

// Raw adds a member whose value is raw JSON, null when raw is "".
func (o *Obj) Raw(k, raw string) *Obj {
	o.key(k)
	if raw == "" {
		o.b = append(o.b, "null"...)
		return o
	}
	o.b = Raw(o.b, raw)
	return o
}

// Int adds a number member.
func (o *Obj) Int(k string, v int64) *Obj {
	o.key(k)
	o.b = Int(o.b, v)
	return o
}

// Bool adds a boolean member.
func (o *Obj) Bool(k string, v bool) *Obj {
	o.key(k)
	o.b = Bool(o.b, v)
	return o
}

// Strings adds an array of strings.
func (o *Obj) Strings(k string, ss []string) *Obj {
	o.key(k)
	o.b = Strings(o.b, ss)
	return o
}

// End closes the object and returns the buffer.
func (o *Obj) End() []byte { return append(o.b, '}') }

// String closes the object and returns it as a string (the part of the
// buffer the object was written to).
func (o *Obj) String() string { return string(o.End()[o.start:]) }
