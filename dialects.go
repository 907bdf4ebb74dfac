package main

// The dialects this build contains, as Caddy lists its modules: each
// registers itself with adapter.Register from its own init, and this list
// of imports decides which are in the binary.
import (
	_ "github.com/ccbridge/ccbridge/adapter/acp"
	_ "github.com/ccbridge/ccbridge/adapter/ipc"
	_ "github.com/ccbridge/ccbridge/adapter/rpc"
	_ "github.com/ccbridge/ccbridge/adapter/stream"
	_ "github.com/ccbridge/ccbridge/adapter/worker"
)
