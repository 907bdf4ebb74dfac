// Package stream is the stream dialect (--ui stream) and drop-in mode
// (ccbridge run with the CLI's own arguments): the CLI's stream-json
// passed through byte for byte, with what a hand-rolled relay lacks
// (DropIn.Run lists it). Its relay does not hand every line to a loop, so
// that it stays as fast as a plain byte relay; it runs on the core's
// Host, which gives it the UI's writer, Submit, the signals' rule and the
// clock that the Loop uses. The offline demo (Demo) lives here too.
package stream
