package adaptertest

import (
	"log/slog"
	"os"
	"strings"
	"testing"
)

// Logger logs to the test's output when CCBRIDGE_TEST_LOG is set, and is
// nil (the session's default: no logs) otherwise.
func Logger(t *testing.T) *slog.Logger {
	if os.Getenv("CCBRIDGE_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
