package loadgen

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
)

// Connections is what a run's clients connected over: the TLS its
// connections negotiated and the SASL mechanism they authenticated with
// (read back from the connections, not taken from the config), and with
// ConnectionChurn the producers' reconnects.
type Connections struct {
	// TLSVersion and TLSCipher are what the clients' TLS connections
	// negotiated (Go's names, e.g. "TLSv1.3" is "TLS 1.3" and
	// "TLS_AES_128_GCM_SHA256"); empty without TLS. Every connection of
	// the run is checked against the row's tls_version and tls_cipher; one
	// that differs is an error of the run.
	TLSVersion string `json:"tls_version,omitempty"`
	TLSCipher  string `json:"tls_cipher,omitempty"`
	// TLSKey is the key of the server's certificate, as a row's tls_key
	// names it (ecdsa-p256, rsa2048, rsa4096; otherwise the algorithm
	// and size, e.g. "rsa3072").
	TLSKey string `json:"tls_key,omitempty"`
	// SASLMechanism is the mechanism every connection authenticated with
	// (Kafka's name); empty without SASL.
	SASLMechanism string `json:"sasl_mechanism,omitempty"`
	// Churn is the records per producer between reconnects (0: none).
	Churn int `json:"churn"`
	// Reconnects counts producer clients closed and opened again after a
	// record intended inside the measurement window.
	Reconnects int64 `json:"reconnects"`
	// Handshakes counts the producers' connections set up (TCP, TLS,
	// ApiVersions and SASL) inside the window, and HandshakesPerS them per
	// second of the window.
	Handshakes     int64   `json:"handshakes"`
	HandshakesPerS float64 `json:"handshakes_per_s"`
	// ReconnectMs summarizes how long each of those took, from dialing to
	// an authenticated connection; Reconnect is its HDR histogram
	// (EncodeHistogram form).
	ReconnectMs Percentiles `json:"reconnect_ms"`
	Reconnect   string      `json:"reconnect_histogram,omitempty"`
}

// connWatch is a kgo hook on every client of a run: it checks what each
// connection negotiated and, for producers, counts the connections set up
// in the measurement window and records how long each took.
type connWatch struct {
	r      *run
	choice kafkaconf.TLSChoice

	handshakes atomic.Int64
	reconnects atomic.Int64
	mu         sync.Mutex
	hist       *hdrhistogram.Histogram
	version    string
	cipher     string
	key        string
}

// producerHook and clientHook are the hook as producers and as other
// clients see it.
type (
	producerHook struct{ w *connWatch }
	clientHook   struct{ w *connWatch }
)

var (
	_ kgo.HookBrokerConnect = producerHook{}
	_ kgo.HookBrokerConnect = clientHook{}
)

func newConnWatch(r *run, choice kafkaconf.TLSChoice) *connWatch {
	return &connWatch{r: r, choice: choice, hist: NewHistogram()}
}

// OnBrokerConnect runs once franz-go has set a connection up: dialed,
// TLS handshake, ApiVersions and SASL (its deferred hook measures all of
// it).
// Producers carry both hooks (their options start with the run's base):
// clientHook checks the connection, producerHook counts it.
func (h producerHook) OnBrokerConnect(_ kgo.BrokerMetadata, d time.Duration, _ net.Conn, err error) {
	if err != nil {
		return
	}
	if now := h.w.r.now(); h.w.r.inWindow(now) {
		h.w.handshakes.Add(1)
		h.w.mu.Lock()
		h.w.hist.RecordValue(max(HistMinUs, min(HistMaxUs, d.Microseconds())))
		h.w.mu.Unlock()
	}
}

func (h clientHook) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, conn net.Conn, err error) {
	h.w.observe(conn, err)
}

// observe reads what a connection negotiated and notes a departure from
// the row's choice as an error of the run.
func (w *connWatch) observe(conn net.Conn, err error) {
	if err != nil {
		return
	}
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return
	}
	cs := tc.ConnectionState()
	if why := w.choice.Check(cs); why != "" {
		w.r.noteErr(errString("tls: " + why))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.version == "" {
		w.version, w.cipher = tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite)
		if len(cs.PeerCertificates) > 0 {
			w.key = keyName(cs.PeerCertificates[0].PublicKey)
		}
	}
}

// inWindow reports whether run-clock time ns lies in the measurement
// window (before the timeline is planned, nothing does).
func (r *run) inWindow(ns int64) bool {
	return r.measEnd != 0 && ns >= r.warmEnd && ns < r.measEnd
}

// result summarizes the watch for a Result.
func (w *connWatch) result(mech string, churn int, window time.Duration) (*Connections, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := &Connections{TLSVersion: w.version, TLSCipher: w.cipher, TLSKey: w.key, SASLMechanism: mech, Churn: churn,
		Reconnects: w.reconnects.Load(), Handshakes: w.handshakes.Load(), ReconnectMs: Summarize(w.hist)}
	c.HandshakesPerS = float64(c.Handshakes) / window.Seconds()
	b, err := EncodeHistogram(w.hist)
	if err != nil {
		return nil, err
	}
	c.Reconnect = string(b)
	return c, nil
}

// keyName names a certificate's public key as tls_key does.
func keyName(pub any) string {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		return "ecdsa-p" + strconv.Itoa(k.Curve.Params().BitSize)
	case *rsa.PublicKey:
		return "rsa" + strconv.Itoa(k.N.BitLen())
	case ed25519.PublicKey:
		return "ed25519"
	}
	return fmt.Sprintf("%T", pub)
}

type errString string

func (e errString) Error() string { return string(e) }

// churner reopens one producer's client every ConnectionChurn records:
// it waits for the client's records to be acknowledged (Flush), closes
// it and opens a new one, which connects, handshakes and authenticates
// again, as a short-lived client does.
type churner struct {
	r     *run
	every int
	sent  int
	cl    **kgo.Client
}

// tick counts one record sent, intended for run-clock time ti, and
// reopens the client when its share is sent; false when the client could
// not be reopened or ctx ended. A reconnect counts in the window when
// the record that set it off does.
func (c *churner) tick(ctx context.Context, ti int64) bool {
	if c == nil {
		return true
	}
	if c.sent++; c.sent < c.every {
		return true
	}
	c.sent = 0
	old := *c.cl
	if err := old.Flush(ctx); err != nil {
		return false
	}
	old.Close()
	cl, err := kgo.NewClient(c.r.producerClientOpts()...)
	if err != nil {
		c.r.noteErr(err)
		// Keep a closed client in place: the loop ends, and closing it
		// again at the end is harmless.
		return false
	}
	*c.cl = cl
	if c.r.inWindow(ti) {
		c.r.conns.reconnects.Add(1)
	}
	return true
}
