//go:build linux

package session

import (
	"testing"
	"time"
)

// BenchmarkGuardian is the cost of the guardian for a CLI that exits at
// once (/bin/true): the time Start takes, and then the time to Done.
//
//	go test -run '^$' -bench Guardian -benchtime 200x ./session
func BenchmarkGuardian(b *testing.B) {
	for _, bc := range []struct {
		name     string
		guardian string
	}{{"direct", ""}, {"guarded", testExe}} {
		b.Run(bc.name, func(b *testing.B) {
			var start, done time.Duration
			for b.Loop() {
				t0 := time.Now()
				c, err := Start(Config{Path: "/bin/true", Guardian: bc.guardian})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				<-c.Done()
				start += t1.Sub(t0)
				done += time.Since(t1)
			}
			b.ReportMetric(float64(start.Microseconds())/float64(b.N), "start-µs/op")
			b.ReportMetric(float64(done.Microseconds())/float64(b.N), "done-µs/op")
		})
	}
}
