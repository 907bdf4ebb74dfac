package e2e

// The web UI's measure (opt-in, like the other perf tests):
//
//  1. page weight: / and every asset the page loads from serve (not
//     /api/), each as served (bytes), gzipped (-9) here, and as serve
//     sends it to a client that accepts gzip;
//  2. first paint and first contentful paint of /, the median of 5 cold
//     loads (HTTP cache off), from performance.getEntriesByType('paint');
//  3. memory: the resident set of the serve process with no web session,
//     then with 10 open ones (each has run one turn, so each has its CLI),
//     and apart from it the sum of its children's (the guardians and the
//     CLIs below them).
//
// It reports and fails nothing unless a run errors.
//
//	CCBRIDGE_PERF=1 go test -run TestWebPerf -v -count=1 ./e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
)

const (
	webPerfLoads    = 5  // page loads for the paint figures
	webPerfSessions = 10 // open web sessions for the memory figure
)

func TestWebPerf(t *testing.T) {
	perfOnly(t, "the web UI's measure")
	dir := t.TempDir()
	s := svStart(t, svOpts{args: []string{"--dir", dir, "--log-level", "info"}})
	origin := strings.TrimSuffix(s.base, svPath)
	var report strings.Builder

	// 1. Page weight.
	w := newTab(t, s, false)
	w.open("/", false)
	w.waitFor("the page's fetches to end", `document.readyState === 'complete'`)
	entries := webEval[string](w, `JSON.stringify(performance.getEntriesByType('resource').map(e => ({name: e.name, type: e.initiatorType})))`)
	urls := []string{origin + "/"}
	for _, e := range gjson.Parse(entries).Array() {
		u, err := url.Parse(e.Get("name").Str)
		if err != nil || u.Scheme+"://"+u.Host != origin || strings.HasPrefix(u.Path, "/api/") {
			continue
		}
		u.Fragment = ""
		if !slices.Contains(urls, u.String()) {
			urls = append(urls, u.String())
		}
	}
	plain := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	var total, totalGz, totalWire int
	fmt.Fprintf(&report, "page weight (%d files):\n  %-32s %9s %9s %9s  %s\n", len(urls), "file", "bytes", "gzip -9", "served", "(served: with Accept-Encoding: gzip)")
	for _, u := range urls {
		body, _ := webPerfGet(t, plain, u, "identity")
		wire, enc := webPerfGet(t, plain, u, "gzip")
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		name := strings.TrimPrefix(u, origin)
		if enc != "" {
			enc = " " + enc
		}
		fmt.Fprintf(&report, "  %-32s %9d %9d %9d%s\n", name, len(body), gz.Len(), len(wire), enc)
		total += len(body)
		totalGz += gz.Len()
		totalWire += len(wire)
	}
	fmt.Fprintf(&report, "  %-32s %9d %9d %9d\n", "total", total, totalGz, totalWire)

	// 2. Paint, cold loads.
	var fps, fcps, dcls []float64
	for range webPerfLoads {
		tab := newTab(t, s, false)
		tab.do("turning the HTTP cache off", 10*time.Second, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true})
			return err
		}))
		tab.open("/", false)
		tab.waitForWithin("the first contentful paint", `performance.getEntriesByType('paint').some(e => e.name === 'first-contentful-paint')`, 15*time.Second)
		got := webEval[string](tab, `JSON.stringify({
			paint: Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime])),
			dcl: (performance.getEntriesByType('navigation')[0] || {}).domContentLoadedEventEnd || 0})`)
		fps = append(fps, gjson.Get(got, `paint.first-paint`).Float())
		fcps = append(fcps, gjson.Get(got, `paint.first-contentful-paint`).Float())
		dcls = append(dcls, gjson.Get(got, "dcl").Float())
	}
	fmt.Fprintf(&report, "paint of / (median of %d cold loads, ms from navigation start):\n", webPerfLoads)
	fmt.Fprintf(&report, "  first paint %.1f  first contentful paint %.1f  DOMContentLoaded end %.1f\n",
		median(slices.Clone(fps)), median(slices.Clone(fcps)), median(slices.Clone(dcls)))
	fmt.Fprintf(&report, "  (each load: first paint %s; first contentful paint %s)\n", formatValues("%.0f", fps), formatValues("%.0f", fcps))

	// 3. Memory: no session, then 10 open ones after a turn each.
	time.Sleep(perfServeSettle)
	pid := s.cmd.Process.Pid
	idle := readPerfServeMem(pid)
	var wg sync.WaitGroup
	errs := make(chan error, webPerfSessions)
	for i := range webPerfSessions {
		id := webCreateSession(t, s, dir)
		wg.Go(func() {
			if err := webPerfTurn(s, origin, id, fmt.Sprintf("hello %d", i)); err != nil {
				errs <- fmt.Errorf("session %s: %w", id, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	time.Sleep(perfServeSettle)
	open := readPerfServeMem(pid)
	fmt.Fprintf(&report, "memory (VmRSS, MiB):\n")
	fmt.Fprintf(&report, "  serve, no web session:          %7.1f\n", mib(idle.rss))
	fmt.Fprintf(&report, "  serve, %2d open web sessions:    %7.1f  (%.2f MiB a session)\n", webPerfSessions, mib(open.rss), mib(open.rss-idle.rss)/webPerfSessions)
	fmt.Fprintf(&report, "  its children with %2d sessions:  %7.1f  (%d CLI processes %.1f, %d guardians %.1f)\n",
		webPerfSessions, mib(open.cliRSS+open.guardRSS), open.nCLI, mib(open.cliRSS), open.nGuard, mib(open.guardRSS))
	t.Logf("web UI measure\n%s", report.String())
}

// webPerfGet fetches u with the Accept-Encoding given and returns the body
// as sent, and its Content-Encoding.
func webPerfGet(t *testing.T, c *http.Client, u, encoding string) ([]byte, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d, %v", u, resp.StatusCode, err)
	}
	return b, resp.Header.Get("Content-Encoding")
}

// webPerfTurn sends text to web session id and waits for its turn's end
// on the session's stream.
func webPerfTurn(s *svServer, origin, id, text string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/api/web/sessions/"+id+"/events", nil)
	if err != nil {
		return err
	}
	resp, err := s.sse.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET events: HTTP %d", resp.StatusCode)
	}
	body, _ := json.Marshal(map[string]string{"type": "user_message", "text": text})
	code, _, b, err := svDo(s.client, http.MethodPost, origin+"/api/web/sessions/"+id+"/messages", "", bytes.NewReader(body))
	if err != nil || code != http.StatusAccepted {
		return fmt.Errorf("POST the message: HTTP %d %v: %.300s", code, err, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		switch gjson.Get(data, "type").Str {
		case "turn_complete":
			return nil
		case "turn_cancelled":
			return fmt.Errorf("the turn was cancelled: %.300s", data)
		case "error":
			if !gjson.Get(data, "recoverable").Bool() {
				return fmt.Errorf("the turn failed: %.300s", data)
			}
		}
	}
	return fmt.Errorf("the stream ended before the turn's end: %v", sc.Err())
}

func mib(kb int64) float64 { return float64(kb) / 1024 }
