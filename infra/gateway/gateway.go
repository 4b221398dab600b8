// Package gateway is xp's Kafka gateway: a layer-7 proxy that unchanged
// Kafka clients use instead of the brokers. It listens on a bootstrap port
// and one port per upstream broker, rewrites the broker endpoints in
// Metadata, FindCoordinator, DescribeCluster, ShareFetch and
// ShareAcknowledge responses to its own, answers ApiVersions with what both
// it and the broker handle, and relays every other frame as opaque bytes,
// pipelined, with correlation ids preserved. Produce requests and fetch
// responses are decoded only when a RecordFilter is configured (the
// encrypting modes).
//
// Client leg: plaintext, tls, mtls or sasl_ssl (SASL relayed to the
// brokers). Broker leg: plaintext, tls or mtls. Each client connection has
// its own broker connection, so SASL identities and quotas stay per client.
package gateway

import (
	"context"
	"crypto/cipher"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/kafkaframe"
	"github.com/xp-bench/xp/internal/aesgcm"
)

// Option configures a Gateway beyond its Config.
type Option func(*options)

type options struct {
	log    *slog.Logger
	getenv func(string) string
}

// WithLogger logs connection events and refused frames to l; default
// discard.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithGetenv reads environment variables (XP_AESGCM) through getenv;
// default os.Getenv.
func WithGetenv(getenv func(string) string) Option { return func(o *options) { o.getenv = getenv } }

// Gateway is a running gateway.
type Gateway struct {
	cfg         *Config
	log         *slog.Logger
	clientTLS   *tls.Config
	upstreamTLS *tls.Config
	metrics     metrics
	crypto      CryptoInfo
	newAEAD     func([]byte) (cipher.AEAD, error)

	// listen opens listeners; net.Listen outside tests.
	listen     func(network, addr string) (net.Listener, error)
	bootstrap  net.Listener
	metricsLn  net.Listener
	metricsSrv *http.Server
	nextBoot   atomic.Uint32

	// ctx ends with Close, cutting short dials and handshakes.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.RWMutex
	nodes  map[int32]*node
	conns  map[*proxyConn]struct{}
	closed bool

	topicsMu sync.RWMutex
	topics   map[[16]byte]string

	wg sync.WaitGroup
}

// node is one upstream broker and the listener fronting it.
type node struct {
	id       int32
	ln       net.Listener
	port     int32
	upstream atomic.Pointer[string]
}

// Start validates cfg, opens the bootstrap and metrics listeners and serves
// until Close (or ctx is done).
func Start(ctx context.Context, cfg *Config, opts ...Option) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{log: slog.New(slog.DiscardHandler), getenv: os.Getenv}
	for _, opt := range opts {
		opt(&o)
	}
	info, newAEAD, err := resolveCrypto(cfg, o.getenv(aesgcm.EnvSelect))
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g := &Gateway{
		cfg:     cfg,
		log:     o.log,
		nodes:   map[int32]*node{},
		conns:   map[*proxyConn]struct{}{},
		topics:  map[[16]byte]string{},
		listen:  net.Listen,
		crypto:  info,
		newAEAD: newAEAD,
	}
	for _, f := range cfg.Filters {
		if cu, ok := f.(CipherUser); ok {
			cu.UseCipher(newAEAD)
		}
	}
	g.log.Info("gateway crypto", "requested", info.Requested, "record_layer", info.RecordLayer,
		"cipher", info.Cipher, "fallback", info.Fallback)
	g.ctx, g.cancel = context.WithCancel(context.Background())
	if g.clientTLS, err = cfg.clientTLS(); err != nil {
		return nil, &ConfigError{Msg: "client: " + err.Error()}
	}
	if g.upstreamTLS, err = cfg.upstreamTLS(); err != nil {
		return nil, &ConfigError{Msg: "upstream: " + err.Error()}
	}
	addr := net.JoinHostPort(cfg.Listen.Host, strconv.Itoa(*cfg.Listen.BootstrapPort))
	if g.bootstrap, err = net.Listen("tcp", addr); err != nil {
		return nil, fmt.Errorf("gateway: bootstrap listener: %w", err)
	}
	if cfg.Metrics.Listen != "off" {
		if g.metricsLn, err = net.Listen("tcp", cfg.Metrics.Listen); err != nil {
			g.bootstrap.Close()
			return nil, fmt.Errorf("gateway: metrics listener (metrics.listen): %w", err)
		}
		g.metricsSrv = &http.Server{Handler: g.metrics.handler(), ReadHeaderTimeout: 5 * time.Second}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			_ = g.metricsSrv.Serve(g.metricsLn)
		}()
	}
	g.wg.Add(1)
	go g.accept(g.bootstrap, nil)
	g.wg.Add(1)
	go g.prime()
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				g.Close()
			case <-g.ctx.Done():
			}
		}()
	}
	g.log.Info("gateway listening", "bootstrap", g.Bootstrap(), "client_transport", cfg.Client.Transport,
		"upstream", cfg.Upstream.Bootstrap, "upstream_transport", cfg.Upstream.Transport, "metrics", g.MetricsURL())
	return g, nil
}

// Run starts a gateway and serves until ctx is done.
func Run(ctx context.Context, cfg *Config, opts ...Option) error {
	g, err := Start(ctx, cfg, opts...)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return g.Close()
}

// Bootstrap is the address clients bootstrap from (advertised host and the
// bound bootstrap port).
func (g *Gateway) Bootstrap() string {
	return net.JoinHostPort(g.cfg.Listen.AdvertisedHost, strconv.Itoa(g.bootstrap.Addr().(*net.TCPAddr).Port))
}

// Crypto is what the gateway's cryptography runs on.
func (g *Gateway) Crypto() CryptoInfo { return g.crypto }

// MetricsURL is the Prometheus endpoint, or "" when disabled.
func (g *Gateway) MetricsURL() string {
	if g.metricsLn == nil {
		return ""
	}
	return "http://" + g.metricsLn.Addr().String() + "/metrics"
}

// TLSKept counts the TLS legs crypto/tls has carried instead of tlsrec
// since the gateway started (xp_gateway_tls_kept_total; always empty
// unless its record layer is tlsrec).
func (g *Gateway) TLSKept() TLSKept { return g.metrics.kept() }

// WriteMetrics writes the current metrics in Prometheus text format.
func (g *Gateway) WriteMetrics(w io.Writer) error { return g.metrics.write(w) }

// Close stops listening, closes every connection and waits for them.
func (g *Gateway) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.cancel()
	g.bootstrap.Close()
	for _, n := range g.nodes {
		n.ln.Close()
	}
	for c := range g.conns {
		c.close()
	}
	g.mu.Unlock()
	if g.metricsSrv != nil {
		g.metricsSrv.Close()
	}
	g.wg.Wait()
	return nil
}

// route implements routes: the gateway endpoint for upstream node id,
// opening its listener the first time the node is seen.
func (g *Gateway) route(id int32, host string, port int32) (string, int32, error) {
	up := net.JoinHostPort(host, strconv.Itoa(int(port)))
	g.mu.RLock()
	n := g.nodes[id]
	g.mu.RUnlock()
	if n == nil {
		var err error
		if n, err = g.addNode(id); err != nil {
			return "", 0, err
		}
	}
	if cur := n.upstream.Load(); cur == nil || *cur != up {
		n.upstream.Store(&up)
		g.log.Info("upstream node", "node", id, "upstream", up, "gateway", net.JoinHostPort(g.cfg.Listen.AdvertisedHost, strconv.Itoa(int(n.port))))
	}
	return g.cfg.Listen.AdvertisedHost, n.port, nil
}

func (g *Gateway) addNode(id int32) (*node, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.nodes[id]; n != nil {
		return n, nil
	}
	if g.closed {
		return nil, errors.New("gateway closed")
	}
	port := 0
	if base := *g.cfg.Listen.NodePortBase; base != 0 {
		port = base + int(id)
		if id < 0 || port > 65535 {
			return nil, fmt.Errorf("upstream node id %d does not fit listen.node_port_base %d (set it to 0 for free ports)", id, base)
		}
	}
	ln, err := g.listen("tcp", net.JoinHostPort(g.cfg.Listen.Host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listener for upstream node %d: %w", id, err)
	}
	n := &node{id: id, ln: ln, port: int32(ln.Addr().(*net.TCPAddr).Port)}
	g.nodes[id] = n
	g.wg.Add(1)
	go g.accept(ln, n)
	return n, nil
}

func (g *Gateway) learnTopic(id [16]byte, name string) {
	g.topicsMu.RLock()
	cur, ok := g.topics[id]
	g.topicsMu.RUnlock()
	if ok && cur == name {
		return
	}
	g.topicsMu.Lock()
	g.topics[id] = strings.Clone(name) // name aliases a frame buffer
	g.topicsMu.Unlock()
}

func (g *Gateway) topicName(id [16]byte) (string, bool) {
	g.topicsMu.RLock()
	defer g.topicsMu.RUnlock()
	s, ok := g.topics[id]
	return s, ok
}

// prime asks the upstream for its brokers once at start, so that node
// listeners exist before any client has fetched metadata: a client that
// remembers node addresses from before a gateway restart finds them open.
// Upstreams that require SASL refuse the gateway's own request; their node
// listeners open with the first client's metadata instead.
func (g *Gateway) prime() {
	defer g.wg.Done()
	c, addr, err := g.dialUpstream(nil)
	if err != nil {
		g.log.Debug("priming node listeners: upstream unreachable", "error", err)
		return
	}
	defer c.Close()
	stop := context.AfterFunc(g.ctx, func() { c.Close() }) // Close does not wait for it
	defer stop()
	_ = c.SetDeadline(time.Now().Add(g.cfg.Upstream.DialTimeout))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 1
	req.Topics = []kmsg.MetadataRequestTopic{} // brokers only
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("xp-gateway")).AppendRequest(nil, req, 1)
	if _, err := c.Write(frame); err != nil {
		return
	}
	body, err := kafkaframe.ReadFrame(c, nil, 4, 1<<20)
	if err != nil {
		g.log.Debug("priming node listeners: no metadata from the upstream (SASL?)", "upstream", addr, "error", err)
		return
	}
	if _, _, err := rewriteResponse(nil, body[4:], keyMetadata, 1, g); err != nil {
		g.log.Debug("priming node listeners", "error", err)
	}
}

// accept serves one listener; n is nil for the bootstrap listener.
func (g *Gateway) accept(ln net.Listener, n *node) {
	defer g.wg.Done()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			g.mu.RLock()
			closed := g.closed
			g.mu.RUnlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: back off, bounded, so
			// the gateway stays up and recovers.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			g.log.Warn("accept failed", "error", err, "retry_in", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.serve(c, n)
		}()
	}
}

// serve handles one client connection: TLS towards the client, a dial to
// the broker the listener fronts, then the two relay loops.
func (g *Gateway) serve(c net.Conn, n *node) {
	g.metrics.connTotal.Add(1)
	g.metrics.connActive.Add(1)
	defer g.metrics.connActive.Add(-1)
	log := g.log.With("client", c.RemoteAddr().String())
	if n != nil {
		log = log.With("node", n.id)
	} else {
		log = log.With("node", "bootstrap")
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c = rawSyscalls(c)
	client := c
	if g.clientTLS != nil {
		ctx, cancel := context.WithTimeout(g.ctx, g.cfg.Upstream.DialTimeout)
		tc, err := g.handshake(ctx, c, g.clientTLS, true)
		cancel()
		if err != nil {
			log.Warn("client TLS handshake failed", "error", err)
			g.metrics.closed[closeHandshake].Add(1)
			c.Close()
			return
		}
		client = tc
	}
	up, addr, err := g.dialUpstream(n)
	if err != nil {
		log.Warn("cannot reach upstream broker; closing the client connection so it retries", "error", err)
		g.metrics.closed[closeUpstreamDial].Add(1)
		client.Close()
		return
	}
	p := newProxyConn(g, client, up, log.With("upstream", addr))
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		p.close()
		return
	}
	g.conns[p] = struct{}{}
	g.mu.Unlock()
	reason := p.run()
	g.metrics.closed[reason].Add(1)
	g.mu.Lock()
	delete(g.conns, p)
	g.mu.Unlock()
}

// dialUpstream connects to the broker behind n, or for the bootstrap
// listener to the configured bootstrap brokers in turn. Only configured
// addresses and addresses the upstream advertised are ever dialled.
func (g *Gateway) dialUpstream(n *node) (net.Conn, string, error) {
	var addrs []string
	if n != nil {
		addrs = []string{*n.upstream.Load()}
	} else {
		bs := g.cfg.Upstream.Bootstrap
		start := int(g.nextBoot.Add(1)) % len(bs)
		for i := range bs {
			addrs = append(addrs, bs[(start+i)%len(bs)])
		}
	}
	var errs []error
	for _, a := range addrs {
		c, err := g.dial(a)
		if err == nil {
			return c, a, nil
		}
		errs = append(errs, err)
	}
	return nil, "", errors.Join(errs...)
}

func (g *Gateway) dial(addr string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(g.ctx, g.cfg.Upstream.DialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c = rawSyscalls(c)
	if g.upstreamTLS == nil {
		return c, nil
	}
	cfg := g.upstreamTLS
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	tc, err := g.handshake(ctx, c, cfg, false)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS to %s: %w", addr, err)
	}
	return tc, nil
}
