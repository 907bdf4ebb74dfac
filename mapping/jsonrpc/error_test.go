package jsonrpc

import (
	"errors"
	"fmt"
	"testing"
)

func TestError(t *testing.T) {
	e := &Error{Code: CodeInvalidParams, Message: "params.x must be a string", Data: `{"field":"x"}`}
	if got, want := e.Error(), "jsonrpc error -32602: params.x must be a string"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("reading: %w", e)
	if !errors.Is(wrapped, &Error{Code: CodeInvalidParams}) {
		t.Error("errors.Is does not match the same code")
	}
	if errors.Is(wrapped, &Error{Code: CodeInternalError}) {
		t.Error("errors.Is matches another code")
	}
	if errors.Is(wrapped, errors.New("jsonrpc error -32602: params.x must be a string")) {
		t.Error("errors.Is matches an error of another type")
	}
	cases := map[string]string{
		string(e.AppendResponse(nil, `"a"`)):                                    `{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"params.x must be a string","data":{"field":"x"}}}`,
		string((&Error{Code: -32000, Message: "busy"}).AppendResponse(nil, "")): `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"busy"}}`,
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
