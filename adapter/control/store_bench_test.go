package control

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkStore measures Begin+Finish on fresh keys and Begin on a
// duplicate, for each store. The durable store's dir is the test's temp
// dir (set TMPDIR to measure another disk); every change is fsynced.
func BenchmarkStore(b *testing.B) {
	for _, sk := range storeKinds {
		b.Run(sk.name+"/fresh", func(b *testing.B) {
			s := sk.open(b, StoreConfig{})
			k := key("")
			now := time.Now()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k.RequestID = strconv.Itoa(i)
				if _, fresh, err := s.Begin(k, now); err != nil || !fresh {
					b.Fatal(fresh, err)
				}
				if err := s.Finish(k, Outcome{Result: "ok", At: now}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
		b.Run(sk.name+"/duplicate", func(b *testing.B) {
			s := sk.open(b, StoreConfig{})
			k := key("dup")
			now := time.Now()
			if _, _, err := s.Begin(k, now); err != nil {
				b.Fatal(err)
			}
			if err := s.Finish(k, Outcome{Result: "ok", At: now}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, fresh, err := s.Begin(k, now); err != nil || fresh {
					b.Fatal(fresh, err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkAuditLog measures Log (the caller's side: format and append).
func BenchmarkAuditLog(b *testing.B) {
	a := NewAudit(discard{}, false)
	defer a.Close()
	ev := AuditEvent{Event: "ack", RequestID: "req_01HZY8QJ8R7G6K2YJ7V2M9A1P3", Team: "atm-dev",
		SessionID: "0b7c3f0e-3c1e-4f43-9d55-1f2d3c4b5a69", AgentID: "codex:abc123", Sender: "arch-ctm",
		Lane: "000", Result: "ok", Detail: "queued"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		a.Log(ev)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
