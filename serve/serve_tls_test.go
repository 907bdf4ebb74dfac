package serve

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ccbridge/ccbridge/internal/version"
	"github.com/ccbridge/ccbridge/session"
)

// testPKI is a CA made for one test and a server certificate it signed
// for localhost, 127.0.0.1 and ::1, written to files. No key leaves the
// test's temporary folder.
type testPKI struct {
	pool              *x509.CertPool // trusts the CA only
	certFile, keyFile string
	otherKey          string // a key file that is not the certificate's
	garbage, missing  string // a file that is no PEM, and none at all
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, "PRIVATE KEY", der)
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ccbridge test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvKey := key()
	srvDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{pool: x509.NewCertPool(), certFile: write("cert.pem", "CERTIFICATE", srvDER),
		keyFile: writeKey("key.pem", srvKey), otherKey: writeKey("other.pem", key()),
		garbage: filepath.Join(dir, "garbage.pem"), missing: filepath.Join(dir, "missing.pem")}
	p.pool.AddCert(ca)
	if err := os.WriteFile(p.garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// client is an HTTPS client that trusts the test's CA only.
func (p *testPKI) client(maxVersion uint16) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS10, MaxVersion: maxVersion}}}
}

// TestServeTLSConfig: --tls-cert and --tls-key go together, load before
// anything listens, and exclude --insecure-http; beyond loopback a token
// file needs TLS or --insecure-http; loopback without TLS is as before.
func TestServeTLSConfig(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	getenv := func(string) string { return "" }
	tokens := writeTokenFile(t, 0o600, "tok\n")
	w := []string{"--worker", "a=" + dir}
	for _, c := range []struct {
		args []string
		bad  string // what the error names; "" for none
	}{
		{[]string{"--tls-cert", p.certFile}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-key", p.keyFile}, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-cert", p.certFile, "--tls-key", p.keyFile, "--insecure-http"}, "give one or the other"},
		{[]string{"--tls-cert", p.missing, "--tls-key", p.keyFile}, "no such file"},
		{[]string{"--tls-cert", p.certFile, "--tls-key", p.missing}, "no such file"},
		{[]string{"--tls-cert", p.garbage, "--tls-key", p.keyFile}, "PEM"},
		{[]string{"--tls-cert", p.certFile, "--tls-key", p.otherKey}, "does not match"},
		{[]string{"--tls-cert", p.certFile, "--tls-key", p.keyFile}, ""},
		{[]string{"--tls-cert", p.certFile, "--tls-key", p.keyFile, "--listen", "[::1]:0"}, ""},
		// Beyond loopback: a token file, and TLS or --insecure-http.
		{[]string{"--listen", "0.0.0.0:8787", "--token-file", tokens}, "in clear"},
		{[]string{"--listen", "192.0.2.1:8787", "--token-file", tokens}, "in clear"},
		{[]string{"--listen", ":8787", "--token-file", tokens}, "--insecure-http"},
		{[]string{"--listen", "0.0.0.0:8787", "--token-file", tokens, "--tls-cert", p.certFile, "--tls-key", p.keyFile}, ""},
		{[]string{"--listen", "0.0.0.0:8787", "--token-file", tokens, "--insecure-http"}, ""},
		{[]string{"--listen", "0.0.0.0:8787", "--tls-cert", p.certFile, "--tls-key", p.keyFile}, "give --token-file"},
		{[]string{"--listen", "0.0.0.0:8787", "--insecure-http"}, "give --token-file"},
		// Loopback: no TLS needed, with a token file or without.
		{[]string{"--listen", "127.0.0.1:0"}, ""},
		{[]string{"--listen", "localhost:0", "--token-file", tokens}, ""},
		{[]string{"--listen", "127.0.0.1:0", "--insecure-http"}, ""},
	} {
		cfg, err := parseServe(append(c.args, w...), getenv, io.Discard)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)):
			t.Errorf("%q: err %v, want one naming %q", c.args, err, c.bad)
		case err == nil && (cfg.tls != nil) != strings.Contains(strings.Join(c.args, " "), "--tls-cert"):
			t.Errorf("%q: TLS %v", c.args, cfg.tls != nil)
		}
	}
	// Main: exit 2 with the reason, before the CLI is looked for or any
	// port is listened on.
	for _, args := range [][]string{{"--tls-key", p.keyFile}, {"--tls-cert", p.certFile, "--tls-key", p.otherKey}} {
		var stderr bytes.Buffer
		launch := func(string, string, *slog.Logger) (func(string) session.Config, func(), int, error) {
			t.Errorf("%q: launched", args)
			return nil, func() {}, 1, io.EOF
		}
		if code := Main(context.Background(), append(args, w...), getenv, &stderr, launch); code != 2 || !strings.Contains(stderr.String(), "--tls-") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}

// servingURL catches the url of serve's "serving" log line.
type servingURL struct {
	once sync.Once
	url  chan string
}

func (s *servingURL) Write(b []byte) (int, error) {
	if gjson.GetBytes(b, "msg").Str == "serving" {
		s.once.Do(func() { s.url <- gjson.GetBytes(b, "url").Str })
	}
	return len(b), nil
}

// TestServeTLS: serve with --tls-cert and --tls-key, run as the command
// runs it: HTTPS only (a plain HTTP request on its port gets net/http's
// 400 and nothing of the app), TLS 1.2 at least, Strict-Transport-Security
// on every answer, the page's origin https://, and its cookie Secure.
func TestServeTLS(t *testing.T) {
	p := newTestPKI(t)
	tokens := writeTokenFile(t, 0o600, "tok\n")
	cfg, err := parseServe([]string{"--listen", "127.0.0.1:0", "--dir", t.TempDir(), "--token-file", tokens,
		"--tls-cert", p.certFile, "--tls-key", p.keyFile}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	logs := &servingURL{url: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, err := serveWorkers(ctx, cfg, nil, slog.New(slog.NewJSONHandler(logs, nil)))
		if err != nil {
			t.Errorf("serveWorkers: %v", err)
		}
		done <- code
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit code %d", code)
		}
	})
	var base string
	select {
	case base = <-logs.url:
	case code := <-done:
		t.Fatalf("serve ended with %d before serving", code)
	}
	if !strings.HasPrefix(base, "https://127.0.0.1:") || !strings.HasSuffix(base, "/") {
		t.Fatalf("serving url %q, want https://127.0.0.1:PORT/", base)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/")
	c := p.client(0)
	do := func(method, path, body string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+strings.TrimPrefix(path, "/"), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}

	page, body := do("GET", "/", "")
	if page.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`id="version"`)) || page.TLS == nil || page.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("GET / over HTTPS: %d %.200s", page.StatusCode, body)
	}
	info, body := do("GET", "/api/web/info", "", "Authorization", "Bearer tok")
	if v := gjson.GetBytes(body, "version").Str; info.StatusCode != http.StatusOK || v != version.String() {
		t.Errorf("GET /api/web/info: %d %s, want version %q", info.StatusCode, body, version.String())
	}
	unauth, _ := do("GET", "/api/web/sessions", "")
	refused, _ := do("POST", "/api/web/auth", `{"token":"tok"}`, "Origin", "http://"+host)
	for _, r := range []*http.Response{page, info, unauth, refused} {
		if got := r.Header.Get("Strict-Transport-Security"); got != webHSTS {
			t.Errorf("%s %s (%d): Strict-Transport-Security %q, want %q", r.Request.Method, r.Request.URL.Path, r.StatusCode, got, webHSTS)
		}
	}
	if unauth.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", unauth.StatusCode)
	}
	// Over TLS the page's origin is https://: an http:// one is another.
	if refused.StatusCode != http.StatusForbidden {
		t.Errorf("POST with Origin http://%s over HTTPS: %d, want 403", host, refused.StatusCode)
	}
	auth, body := do("POST", "/api/web/auth", `{"token":"tok"}`, "Origin", "https://"+host)
	if ck := auth.Cookies(); auth.StatusCode != http.StatusNoContent || len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly {
		t.Errorf("POST /api/web/auth over HTTPS: %d %s, cookies %v; want one Secure", auth.StatusCode, body, auth.Header.Values("Set-Cookie"))
	}

	// Plain HTTP on the same port: net/http's 400, none of the app.
	plain := &http.Client{Timeout: 30 * time.Second}
	for _, path := range []string{"/", "/api/web/info", "/app.js", "/api/runtime/codex/workers"} {
		resp, err := plain.Get("http://" + host + path)
		if err != nil {
			t.Errorf("plain GET %s: %v", path, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Security-Policy") != "" ||
			bytes.Contains(b, []byte("ccbridge")) || bytes.Contains(b, []byte("version")) || bytes.Contains(b, []byte("<")) {
			t.Errorf("plain GET %s: %d %v %q; want net/http's 400 and nothing else", path, resp.StatusCode, resp.Header, b)
		}
	}
	// TLS 1.1 and older: refused by the server.
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		if _, err := p.client(v).Get(base); err == nil || !strings.Contains(err.Error(), "protocol version") {
			t.Errorf("TLS %#x: err %v, want the server's protocol_version alert", v, err)
		}
	}
	// A client that does not trust the CA gets no answer.
	if _, err := (&http.Client{Timeout: 30 * time.Second}).Get(base); err == nil {
		t.Error("a client without the CA: no error")
	}
}

// TestServeTLSProxy: with --insecure-http (a proxy in front speaks HTTPS)
// the page's origin may be https:// and its Host, and the cookie set for
// such a page is Secure; without, an https:// origin on plain HTTP is
// another's. No response over plain HTTP carries Strict-Transport-Security.
func TestServeTLSProxy(t *testing.T) {
	tokens, err := loadTokens(writeTokenFile(t, 0o600, "all\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, proxied := range []bool{false, true} {
		wt := newWebTest(t, tokens, nil)
		wt.api.tlsProxy = proxied
		host := strings.TrimPrefix(wt.ts.URL, "http://")
		https := wt.do(t, "POST", "/api/web/auth", `{"token":"all"}`, "Origin", "https://"+host)
		http1 := wt.do(t, "POST", "/api/web/auth", `{"token":"all"}`, "Origin", "http://"+host)
		other := wt.do(t, "POST", "/api/web/auth", `{"token":"all"}`, "Origin", "https://evil.example")
		if proxied {
			if https.status != http.StatusNoContent || !strings.Contains(https.header.Get("Set-Cookie"), "; Secure") {
				t.Errorf("proxied, Origin https://%s: %d %q, want 204 and a Secure cookie", host, https.status, https.header.Get("Set-Cookie"))
			}
		} else {
			wantWebError(t, https, http.StatusForbidden, "forbidden_origin")
		}
		if http1.status != http.StatusNoContent || strings.Contains(http1.header.Get("Set-Cookie"), "Secure") {
			t.Errorf("proxied %v, Origin http://%s: %d %q, want 204 and a cookie that is not Secure", proxied, host, http1.status, http1.header.Get("Set-Cookie"))
		}
		wantWebError(t, other, http.StatusForbidden, "forbidden_origin")
		for _, r := range []serveResp{https, http1, other} {
			if h := r.header.Get("Strict-Transport-Security"); h != "" {
				t.Errorf("plain HTTP with Strict-Transport-Security %q", h)
			}
		}
	}
}
