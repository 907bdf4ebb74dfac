package rpc

import (
	"strconv"

	"github.com/ccbridge/ccbridge/internal/jsonw"
	"github.com/tidwall/gjson"
)

// w builds one JSON line field by field. Keys are constants and never need
// escaping; string values are escaped by jsonw; raw values are copied as
// bytes. Commas are placed by jsonw.Key.
type w struct{ b []byte }

func (o *w) key(k string) { o.b = jsonw.Key(o.b, k) }

func (o *w) str(k, v string) {
	o.key(k)
	o.b = jsonw.String(o.b, v)
}

// strOrNull writes v, or null when v is empty.
func (o *w) strOrNull(k, v string) {
	o.key(k)
	if v == "" {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = jsonw.String(o.b, v)
}

// strIf writes v only when it is not empty.
func (o *w) strIf(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

// raw copies raw JSON, or null when raw is empty.
func (o *w) raw(k, raw string) {
	o.key(k)
	o.b = jsonw.Raw(o.b, raw)
}

// rawIf copies r's bytes when r exists.
func (o *w) rawIf(k string, r gjson.Result) {
	if r.Exists() {
		o.raw(k, r.Raw)
	}
}

func (o *w) boolean(k string, v bool) {
	o.key(k)
	o.b = jsonw.Bool(o.b, v)
}

func (o *w) int(k string, v int64) {
	o.key(k)
	o.b = jsonw.Int(o.b, v)
}

func (o *w) float(k string, v float64) {
	o.key(k)
	o.b = jsonw.Float(o.b, v)
}

// obj opens a nested object under k.
func (o *w) obj(k string) {
	o.key(k)
	o.b = append(o.b, '{')
}

// objEsc opens a nested object under a key that may need escaping.
func (o *w) objEsc(k string) {
	if n := len(o.b); n > 0 && o.b[n-1] != '{' && o.b[n-1] != '[' {
		o.b = append(o.b, ',')
	}
	o.b = jsonw.String(o.b, k)
	o.b = append(o.b, ':', '{')
}

// arr opens a nested array under k.
func (o *w) arr(k string) {
	o.key(k)
	o.b = append(o.b, '[')
}

// elem starts an array element (a comma unless it is the first).
func (o *w) elem() {
	if n := len(o.b); n > 0 && o.b[n-1] != '[' {
		o.b = append(o.b, ',')
	}
}

func (o *w) end(c byte) { o.b = append(o.b, c) }

// notification starts {"jsonrpc":"2.0","method":M,"params":{ ; finish
// with endNotification.
func notification(method string, hint int) w {
	b := make([]byte, 0, 48+len(method)+hint)
	b = append(b, `{"jsonrpc":"2.0","method":"`...)
	b = append(b, method...)
	b = append(b, `","params":{`...)
	return w{b}
}

func (o *w) endNotification() []byte { return append(o.b, '}', '}') }

// request starts {"jsonrpc":"2.0","id":ID,"method":M,"params":{ ; finish
// with endNotification. id is the raw id ccbridge chose.
func request(id, method string, hint int) w {
	b := make([]byte, 0, 64+len(method)+len(id)+hint)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, `","params":{`...)
	return w{b}
}

// result starts {"jsonrpc":"2.0","id":ID,"result":{ for a raw id ("" for
// null); finish with endNotification.
func result(id string, hint int) w {
	b := make([]byte, 0, 48+len(id)+hint)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	if id == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, id...)
	}
	b = append(b, `,"result":{`...)
	return w{b}
}

func itoa(n int) string { return strconv.Itoa(n) }
