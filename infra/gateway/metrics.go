package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Close reasons counted in xp_gateway_connections_closed_total.
const (
	closeNormal       = iota // either side hung up
	closeBadFrame            // malformed, oversize or refused frame
	closeUpstreamDial        // could not reach the broker
	closeUpstreamLost        // broker connection failed mid-way
	closeHandshake           // client TLS handshake failed
	closeSASLFailed          // a v0 SASL exchange the gateway translated failed
	closeReasons
)

var closeReasonNames = [closeReasons]string{"normal", "bad_frame", "upstream_dial", "upstream_lost", "client_handshake", "sasl_failed"}

// Reasons counted in xp_gateway_tls_kept_total: why crypto/tls, not
// tlsrec, carries a TLS leg of a crypto fast gateway.
const (
	keptNotTLS13AESGCM = iota // TLS 1.2 or ChaCha20
	keptNoSecrets             // crypto/tls logged no traffic secrets
	keptSentUnderKeys         // the guard: records already sent under the application keys
	keptUntestedGo            // a Go release tlsrec was not tested with
	keptReasons
)

var keptReasonNames = [keptReasons]string{"not_tls13_aesgcm", "no_secrets", "sent_under_keys", "untested_go"}

// Legs of a gateway connection, the leg label of xp_gateway_tls_kept_total.
const (
	legClient   = iota // client to gateway: the gateway is the TLS server
	legUpstream        // gateway to broker: the gateway is the TLS client
	legs
)

var legNames = [legs]string{LegClient, LegUpstream}

// latencyBuckets are the upper bounds, in seconds, of the time a frame spends
// inside the gateway.
var latencyBuckets = [...]float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1}

// histogram is a Prometheus histogram with lock-free observation.
type histogram struct {
	counts [len(latencyBuckets) + 1]atomic.Uint64
	sumNs  atomic.Uint64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(latencyBuckets) && s > latencyBuckets[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(uint64(max(d, 0)))
}

// Directions of the latency histogram.
const (
	dirRequest = iota
	dirResponse
)

// metrics are the gateway's counters, served in Prometheus text format.
type metrics struct {
	connActive atomic.Int64
	connTotal  atomic.Uint64
	closed     [closeReasons]atomic.Uint64
	// Per API key; index kmsg.MaxKey+1 counts keys kmsg does not know.
	requests  [kmsg.MaxKey + 2]atomic.Uint64
	reqBytes  [kmsg.MaxKey + 2]atomic.Uint64
	respBytes [kmsg.MaxKey + 2]atomic.Uint64
	latency   [2]histogram
	tlsKept   [legs][keptReasons]atomic.Uint64
}

func keyIndex(key int16) int {
	if key < 0 || key > kmsg.MaxKey {
		return kmsg.MaxKey + 1
	}
	return int(key)
}

func (m *metrics) request(key int16, bytes int) {
	i := keyIndex(key)
	m.requests[i].Add(1)
	m.reqBytes[i].Add(uint64(bytes))
}

func (m *metrics) response(key int16, bytes int) {
	m.respBytes[keyIndex(key)].Add(uint64(bytes))
}

// write renders the metrics in Prometheus text exposition format 0.0.4.
func (m *metrics) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("# HELP xp_gateway_connections_active Client connections open now.\n# TYPE xp_gateway_connections_active gauge\n")
	p("xp_gateway_connections_active %d\n", m.connActive.Load())
	p("# HELP xp_gateway_connections_total Client connections accepted.\n# TYPE xp_gateway_connections_total counter\n")
	p("xp_gateway_connections_total %d\n", m.connTotal.Load())
	p("# HELP xp_gateway_connections_closed_total Client connections closed, by reason.\n# TYPE xp_gateway_connections_closed_total counter\n")
	for i, n := range closeReasonNames {
		p("xp_gateway_connections_closed_total{reason=%q} %d\n", n, m.closed[i].Load())
	}
	p("# HELP %s TLS legs of a crypto fast gateway that crypto/tls carries instead of tlsrec, by leg and reason.\n# TYPE %s counter\n", tlsKeptMetric, tlsKeptMetric)
	for l, leg := range legNames {
		for i, n := range keptReasonNames {
			p("%s{leg=%q,reason=%q} %d\n", tlsKeptMetric, leg, n, m.tlsKept[l][i].Load())
		}
	}
	type series struct {
		name, help string
		v          *[kmsg.MaxKey + 2]atomic.Uint64
	}
	for _, s := range []series{
		{"xp_gateway_requests_total", "Requests relayed, by API key.", &m.requests},
		{"xp_gateway_request_bytes_total", "Request bytes relayed (frames with their size), by API key.", &m.reqBytes},
		{"xp_gateway_response_bytes_total", "Response bytes relayed (frames with their size), by API key.", &m.respBytes},
	} {
		p("# HELP %s %s\n# TYPE %s counter\n", s.name, s.help, s.name)
		for i := range s.v {
			v := s.v[i].Load()
			if v == 0 {
				continue
			}
			key := "other"
			if i <= kmsg.MaxKey {
				key = strconv.Itoa(i)
			}
			p("%s{api_key=%q,api=%q} %d\n", s.name, key, apiName(int16(min(i, kmsg.MaxKey+1))), v)
		}
	}
	p("# HELP xp_gateway_latency_seconds Time a frame spends inside the gateway, from its last byte read to its last byte handed to the kernel.\n# TYPE xp_gateway_latency_seconds histogram\n")
	for d, dir := range []string{"request", "response"} {
		h := &m.latency[d]
		var cum uint64
		for i, le := range latencyBuckets {
			cum += h.counts[i].Load()
			p("xp_gateway_latency_seconds_bucket{direction=%q,le=%q} %d\n", dir, strconv.FormatFloat(le, 'g', -1, 64), cum)
		}
		cum += h.counts[len(latencyBuckets)].Load()
		p("xp_gateway_latency_seconds_bucket{direction=%q,le=\"+Inf\"} %d\n", dir, cum)
		p("xp_gateway_latency_seconds_sum{direction=%q} %g\n", dir, float64(h.sumNs.Load())/1e9)
		p("xp_gateway_latency_seconds_count{direction=%q} %d\n", dir, cum)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		p("# HELP process_cpu_seconds_total User and system CPU time of the gateway process (getrusage).\n# TYPE process_cpu_seconds_total counter\n")
		p("process_cpu_seconds_total %.6f\n", cpu.Seconds())
		p("# HELP process_max_resident_memory_bytes Peak resident set size.\n# TYPE process_max_resident_memory_bytes gauge\n")
		p("process_max_resident_memory_bytes %d\n", ru.Maxrss*1024)
	}
	return bw.Flush()
}

func (m *metrics) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = m.write(w)
	})
	return mux
}

// kept reads the tls_kept counters.
func (m *metrics) kept() TLSKept {
	k := TLSKept{}
	for l, leg := range legNames {
		for i, reason := range keptReasonNames {
			k.add(leg, reason, int64(m.tlsKept[l][i].Load()))
		}
	}
	return k
}
