package e2e

// ccbridge serve over HTTPS (docs/protocol/worker.md, "HTTPS"): the
// package's test CA and server certificate (made once per run, in
// memory; each serve gets them as files in a folder of its test), a
// serve with --tls-cert and --tls-key answering a client that trusts the
// CA and nothing over plain HTTP. The browser trusts the certificate's
// key alone (browser_harness_test.go), and TestWebPermissionAllow runs
// over HTTPS as well as HTTP.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
)

// svPKI is the test CA and a server certificate it signed for
// 127.0.0.1, ::1 and localhost.
type svPKI struct {
	caPEM, certPEM, keyPEM []byte
	pool                   *x509.CertPool // the CA alone
	// spki is base64(SHA-256(the server certificate's
	// SubjectPublicKeyInfo)): what Chromium's
	// --ignore-certificate-errors-spki-list takes.
	spki string
}

var svTestPKI = sync.OnceValues(func() (*svPKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ccbridge e2e CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	srv, err := x509.ParseCertificate(srvDER)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(srv.RawSubjectPublicKeyInfo)
	p := &svPKI{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		pool:    x509.NewCertPool(),
		spki:    base64.StdEncoding.EncodeToString(sum[:]),
	}
	p.pool.AddCert(ca)
	return p, nil
})

// svTLS returns the test PKI and writes its CA, certificate and key
// into a folder of t: the files' paths.
func svTLS(t testing.TB) (p *svPKI, caFile, certFile, keyFile string) {
	t.Helper()
	p, err := svTestPKI()
	if err != nil {
		t.Fatalf("the test certificates: %v", err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	return p, write("ca.pem", p.caPEM), write("cert.pem", p.certPEM), write("key.pem", p.keyPEM)
}

// TestServeHTTPS: serve with --tls-cert and --tls-key logs an https://
// url and answers a client that trusts the CA (the workers' API, a
// request and its receipt on the stream), with Strict-Transport-Security;
// a plain HTTP request on its port gets net/http's 400 and nothing of
// serve; a client that does not trust the CA gets nothing. With curl at
// hand the same through curl --cacert.
func TestServeHTTPS(t *testing.T) {
	t.Parallel()
	s := svStart(t, svOpts{workers: []string{l4Worker}, tls: true})
	if !strings.HasPrefix(s.base, "https://127.0.0.1:") {
		t.Fatalf("serve's url %q is not https://127.0.0.1:PORT", s.base)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(s.base, "https://"), svPath)
	code, h, b := s.do(http.MethodGet, "", "", nil)
	if code != http.StatusOK || gjson.GetBytes(b, "workers.0.worker_id").Str != l4Worker {
		t.Errorf("GET the workers over HTTPS: HTTP %d %s", code, b)
	}
	if got := h.Get("Strict-Transport-Security"); got != "max-age=31536000" {
		t.Errorf("Strict-Transport-Security %q", got)
	}
	c := s.stream(l4Worker, "", "")
	id := ctlID("start")
	r := s.call(l4Worker, id, "thread/start", map[string]any{}, http.StatusOK)
	if got := c.got[c.waitFrom(0, "thread/start's receipt on the HTTPS stream", l4IsReceipt(id))]; !bytes.Equal(got, r) {
		t.Errorf("the receipt on the stream differs from the HTTP body:\n%s\n%s", got, r)
	}

	plain := &http.Client{Timeout: 30 * time.Second}
	for _, path := range []string{"/", svPath, svPath + "/" + l4Worker} {
		resp, err := plain.Get("http://" + host + path)
		if err != nil {
			t.Errorf("plain HTTP GET %s: %v", path, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Security-Policy") != "" ||
			bytes.Contains(b, []byte(l4Worker)) || bytes.Contains(b, []byte("<")) {
			t.Errorf("plain HTTP GET %s: HTTP %d %v %q; want net/http's 400 alone", path, resp.StatusCode, resp.Header, b)
		}
	}
	if _, err := plain.Get("https://" + host + svPath); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client that does not trust the CA: err %v, want a certificate error", err)
	}

	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Logf("no curl: %v", err)
		return
	}
	out, err := exec.Command(curl, "-sS", "--max-time", "30", "--cacert", s.caFile, "-D", "-", "https://"+host+svPath).CombinedOutput()
	if err != nil || !strings.Contains(strings.ToLower(string(out)), "strict-transport-security: max-age=31536000") ||
		!strings.Contains(string(out), `"worker_id":"`+l4Worker+`"`) {
		t.Errorf("curl --cacert: %v\n%s", err, out)
	}
	out, err = exec.Command(curl, "-sS", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_code}", "http://"+host+svPath).CombinedOutput()
	if err != nil || string(out) != "400" {
		t.Errorf("curl over plain HTTP: %v %q, want 400", err, out)
	}
	if out, err := exec.Command(curl, "-sS", "--max-time", "30", "https://"+host+svPath).CombinedOutput(); err == nil {
		t.Errorf("curl without --cacert reached serve: %s", out)
	}
}

// webWantTLS checks that the tab's page came over HTTPS when want (and
// HTTP/2, which carries all of a page's streams on one connection),
// plain HTTP/1.1 otherwise.
func webWantTLS(w *webTab, want bool) {
	w.t.Helper()
	// A cold run on a loaded machine read an empty nextHopProtocol once
	// ("http: "): it is read again until it has a value, for up to 5 s.
	var got string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got = webEval[string](w, `location.protocol + ' ' + performance.getEntriesByType('navigation')[0].nextHopProtocol`)
		if !strings.HasSuffix(got, " ") || time.Now().After(deadline) {
			break
		}
	}
	if got != map[bool]string{false: "http: http/1.1", true: "https: h2"}[want] {
		w.t.Errorf("the page's protocol is %q (HTTPS %v)", got, want)
	}
}

// TestWebTLSTrust: the shared browser trusts the test certificate's key
// and no other: a server with a certificate of its own is refused.
func TestWebTLSTrust(t *testing.T) {
	t.Parallel()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the browser's refusals
	ts.StartTLS()
	defer ts.Close()
	ctx, cancel := chromedp.NewContext(sharedBrowser(t))
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	nctx, ncancel := context.WithTimeout(ctx, webWait)
	defer ncancel()
	err := chromedp.Do(nctx, chromedp.Navigate(ts.URL))
	if err == nil || !strings.Contains(err.Error(), "ERR_CERT") {
		t.Errorf("navigating to a server of another certificate: err %v, want a certificate error", err)
	}
}

// webCheckVersion checks that the page shows ccbridge's version, as
// `ccbridge version --json` gives it (a development build: dev+COMMIT).
func webCheckVersion(w *webTab) {
	w.t.Helper()
	out, err := exec.Command(ccbridgeBin, "version", "--json").Output()
	if err != nil {
		w.t.Fatalf("ccbridge version --json: %v", err)
	}
	want := gjson.GetBytes(out, "version").Str
	if c := gjson.GetBytes(out, "commit").Str; want == "dev" && c != "" {
		want += "+" + c
	}
	w.waitFor("the version in #version", `(document.querySelector('#version') || {}).textContent === `+jsq(want))
	if !webEval[bool](w, `(() => { const r = document.querySelector('#version').getBoundingClientRect(); return r.width > 0 && r.height > 0; })()`) {
		w.t.Errorf("#version (%s) is not shown", want)
	}
}

// svTLSClient is a TLS client config that trusts the test CA alone.
func svTLSClient(p *svPKI) *tls.Config { return &tls.Config{RootCAs: p.pool} }
