package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/internal/golden"
	"github.com/xp-bench/xp/planner"
)

// Fuzz targets and the response API key each rewriter handles.
var rewriterTargets = []struct {
	target string
	key    int16
}{
	{"FuzzRewriteMetadata", keyMetadata},
	{"FuzzRewriteFindCoordinator", keyFindCoordinator},
	{"FuzzRewriteDescribeCluster", keyDescribeCluster},
	{"FuzzRewriteApiVersions", keyApiVersions},
	{"FuzzRewriteShareFetch", keyShareFetch},
	{"FuzzRewriteShareAcknowledge", keyShareAcknowledge},
}

// fakeRoutes maps every node to gw.test:20000+id without listening.
type fakeRoutes struct{}

func (fakeRoutes) route(id int32, _ string, _ int32) (string, int32, error) {
	return "gw.test", 20000 + id%10000, nil
}
func (fakeRoutes) learnTopic([16]byte, string) {}

// fuzzRewriter checks a rewriter never panics and, when it accepts a body,
// produces one that decodes at the same version, names only gateway
// endpoints and is a fixed point of the rewrite.
func fuzzRewriter(f *testing.F, key int16) {
	f.Fuzz(func(t *testing.T, body []byte, version int16) {
		out, ok, err := rewriteResponse(nil, body, key, version, fakeRoutes{})
		if !ok {
			t.Fatalf("%s not handled", apiName(key))
		}
		if err != nil {
			return
		}
		again, _, err := rewriteResponse(nil, out, key, version, fakeRoutes{})
		if key == keyApiVersions && err != nil {
			// A v0 UNSUPPORTED_VERSION answer read for a newer
			// request is re-encoded as v0; read it back as v0.
			again, _, err = rewriteResponse(nil, out, key, 0, fakeRoutes{})
		}
		if err != nil {
			t.Fatalf("rewritten %s v%d does not decode: %v", apiName(key), version, err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("rewriting %s v%d twice changed it again", apiName(key), version)
		}
	})
}

func FuzzRewriteMetadata(f *testing.F)        { fuzzRewriter(f, keyMetadata) }
func FuzzRewriteFindCoordinator(f *testing.F) { fuzzRewriter(f, keyFindCoordinator) }
func FuzzRewriteDescribeCluster(f *testing.F) { fuzzRewriter(f, keyDescribeCluster) }
func FuzzRewriteApiVersions(f *testing.F)     { fuzzRewriter(f, keyApiVersions) }
func FuzzRewriteShareFetch(f *testing.F)      { fuzzRewriter(f, keyShareFetch) }
func FuzzRewriteShareAcknowledge(f *testing.F) {
	fuzzRewriter(f, keyShareAcknowledge)
}

// FuzzRequestHeader parses one request frame the way the relay does.
func FuzzRequestHeader(f *testing.F) {
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < sizeLen {
			return
		}
		size := int32(binary.BigEndian.Uint32(frame))
		if checkFrameSize(size, minRequestLen, 1<<20) != nil {
			return
		}
		body := frame[sizeLen:]
		h, err := parseRequestPrefix(body)
		if err != nil {
			return
		}
		_ = requestAllowed(h.Key, h.Version)
		hl, err := requestHeaderLen(body, h)
		if err != nil {
			return
		}
		if hl > len(body) {
			t.Fatalf("header length %d beyond the %d-byte body", hl, len(body))
		}
		if h.Key == keyProduce {
			_, _ = produceAcks(body[hl:], h.Version)
		}
		_, _ = responseHeaderLen(body, h.Key, h.Version)
	})
}

// fuzzGateway is a gateway value with limits and metrics but no listeners,
// for driving the relay loops over in-memory pipes.
func fuzzGateway(t testing.TB) *Gateway {
	zero := 0
	cfg := &Config{
		Listen:   Listen{BootstrapPort: &zero, NodePortBase: &zero},
		Upstream: Upstream{Bootstrap: []string{"127.0.0.1:9"}},
		Limits:   Limits{MaxFrameBytes: 1 << 20, MaxInFlight: 8, BufferBytes: 4096},
		Metrics:  Metrics{Listen: "off"},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return &Gateway{cfg: cfg, log: slog.New(slog.DiscardHandler), nodes: map[int32]*node{}, conns: map[*proxyConn]struct{}{}, topics: map[[16]byte]string{},
		listen: func(string, string) (net.Listener, error) { return closedListener{}, nil }}
}

// closedListener stands in for node listeners in fuzzing and benchmarks:
// it has a port and accepts nothing.
type closedListener struct{}

func (closedListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (closedListener) Close() error              { return nil }
func (closedListener) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 30000} }

// FuzzRequestStream feeds a client byte stream to the request loop: any
// input ends with the loop returning, never a panic or a hang.
func FuzzRequestStream(f *testing.F) { fuzzRequestStream(f, fuzzGateway(f)) }

// FuzzFilteredRequestStream is FuzzRequestStream with a record filter
// configured, so produce and fetch requests are decoded (and every other
// produce refused, which answers it from the gateway).
func FuzzFilteredRequestStream(f *testing.F) {
	g := fuzzGateway(f)
	g.cfg.Filters = []RecordFilter{&alternatingFilter{}}
	fuzzRequestStream(f, g)
}

// alternatingFilter refuses every other produce request.
type alternatingFilter struct{ n atomic.Int64 }

func (a *alternatingFilter) ProduceRequest(context.Context, *kmsg.ProduceRequest) error {
	if a.n.Add(1)%2 == 0 {
		return errors.New("refused by the fuzz filter")
	}
	return nil
}

func (a *alternatingFilter) FetchResponse(context.Context, *kmsg.FetchRequest, *kmsg.FetchResponse) error {
	return nil
}

func fuzzRequestStream(f *testing.F, g *Gateway) {
	f.Fuzz(func(t *testing.T, stream []byte) {
		client, clientPeer := net.Pipe()
		up, upPeer := net.Pipe()
		p := newProxyConn(g, clientPeer, upPeer, g.log)
		go func() {
			_, _ = client.Write(stream)
			client.Close()
		}()
		go func() { _, _ = io.Copy(io.Discard, up) }()
		go func() {
			for {
				select {
				case pend := <-p.inflight:
					if pend.saslV0 {
						p.saslAccepted <- true
					}
				case <-p.done:
					return
				}
			}
		}()
		done := make(chan struct{})
		go func() {
			_ = p.requests()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("request loop did not return")
		}
		p.close()
	})
}

// FuzzResponseStream feeds a broker byte stream to the response loop, with
// requests of key and version queued for each correlation id it carries.
func FuzzResponseStream(f *testing.F) {
	g := fuzzGateway(f)
	g.cfg.Filters = nil
	f.Fuzz(func(t *testing.T, key, version int16, stream []byte) {
		client, clientPeer := net.Pipe()
		up, upPeer := net.Pipe()
		p := newProxyConn(g, clientPeer, upPeer, g.log)
		// Queue what the stream answers, as the request loop would.
		for b := stream; len(b) >= 8 && len(p.inflight) < cap(p.inflight); {
			n := int(binary.BigEndian.Uint32(b))
			p.inflight <- pending{key: key, version: version, corr: int32(binary.BigEndian.Uint32(b[4:]))}
			if n < 4 || n > len(b)-4 {
				break
			}
			b = b[4+n:]
		}
		go func() {
			_, _ = up.Write(stream)
			up.Close()
		}()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		done := make(chan struct{})
		go func() {
			_ = p.responses()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("response loop did not return")
		}
		p.close()
	})
}

// capture records every byte each way on the connections a kfake listener
// accepts.
type capture struct {
	mu    sync.Mutex
	conns []*capturedConn
}

type capturedConn struct {
	net.Conn
	mu       sync.Mutex
	in, out  bytes.Buffer // client→broker, broker→client
	captured *capture
}

func (c *capturedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.in.Write(b[:n])
	c.mu.Unlock()
	return n, err
}

func (c *capturedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.mu.Lock()
	c.out.Write(b[:n])
	c.mu.Unlock()
	return n, err
}

type captureListener struct {
	net.Listener
	c *capture
}

func (l captureListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &capturedConn{Conn: conn, captured: l.c}
	l.c.mu.Lock()
	l.c.conns = append(l.c.conns, cc)
	l.c.mu.Unlock()
	return cc, nil
}

// splitFrames cuts a stream into whole frames (size included).
func splitFrames(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b)) + 4
		if n > len(b) {
			break
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// corpusEntry is one seed file in the go test fuzz v1 format.
func corpusEntry(values ...any) string {
	var sb strings.Builder
	sb.WriteString("go test fuzz v1\n")
	for _, v := range values {
		switch v := v.(type) {
		case []byte:
			fmt.Fprintf(&sb, "[]byte(%s)\n", strconv.Quote(string(v)))
		case int16:
			fmt.Fprintf(&sb, "int16(%d)\n", v)
		}
	}
	return sb.String()
}

// TestFuzzCorpus captures real frames off franz-go and raw clients talking
// to kfake, checks every fuzz target has frames to seed it, and with
// -update writes them to testdata/fuzz (the seed corpora `go test` runs
// and `go test -fuzz` starts from). Without -update it checks the
// committed corpora are present and hold frames that decode.
func TestFuzzCorpus(t *testing.T) {
	cap := &capture{}
	kf := startUpstream(t, upstreamSpec{brokers: 2, transport: planner.SecurityPlaintext}, kfake.ListenFn(func(network, addr string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		if err != nil {
			return nil, err
		}
		return captureListener{ln, cap}, nil
	}))
	// Real client traffic: produce (compressed and not), consume in a
	// group, admin-style requests at several versions.
	opts := []kgo.Opt{kgo.SeedBrokers(kf.ListenAddrs()...)}
	produce(t, opts, "roundtrip", 20, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	produce(t, opts, "roundtrip", 5, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	consume(t, append(opts, kgo.ConsumerGroup("corpus")), "roundtrip", 25)
	rc := dialRaw(t, kf.ListenAddrs()[0], planner.SecurityPlaintext)
	for v := int16(0); v <= 12; v++ {
		rc.roundTrip(&kmsg.MetadataRequest{Version: v})
	}
	for v := int16(0); v <= 6; v++ {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorKeys = v, "corpus", []string{"corpus", "other"}
		rc.roundTrip(req)
	}
	for v := int16(0); v <= 2; v++ {
		rc.roundTrip(&kmsg.DescribeClusterRequest{Version: v})
	}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "xp", "1"
		rc.roundTrip(req)
	}
	group, member := "share", "member-1"
	for v := int16(1); v <= 2; v++ {
		sf := kmsg.NewPtrShareFetchRequest()
		sf.Version, sf.GroupID, sf.MemberID, sf.MaxBytes = v, &group, &member, 1<<20
		rc.roundTrip(sf)
		sa := kmsg.NewPtrShareAcknowledgeRequest()
		sa.Version, sa.GroupID, sa.MemberID = v, &group, &member
		rc.roundTrip(sa)
	}

	// Pair each response with its request's key and version.
	type kv struct{ key, version int16 }
	requests := map[kv][]byte{}
	responses := map[kv][]byte{} // bodies after the response header
	var streams [][]byte
	cap.mu.Lock()
	for _, c := range cap.conns {
		c.mu.Lock()
		in, out := bytes.Clone(c.in.Bytes()), bytes.Clone(c.out.Bytes())
		c.mu.Unlock()
		if len(in) > 0 && len(in) < 64<<10 {
			streams = append(streams, in)
		}
		byCorr := map[int32]kv{}
		for _, fr := range splitFrames(in) {
			h, err := parseRequestPrefix(fr[sizeLen:])
			if err != nil {
				continue
			}
			byCorr[h.CorrID] = kv{h.Key, h.Version}
			if _, ok := requests[kv{h.Key, h.Version}]; !ok && len(fr) < 64<<10 {
				requests[kv{h.Key, h.Version}] = fr
			}
		}
		for _, fr := range splitFrames(out) {
			body := fr[sizeLen:]
			if len(body) < 4 {
				continue
			}
			r, ok := byCorr[int32(binary.BigEndian.Uint32(body))]
			if !ok {
				continue
			}
			hl, err := responseHeaderLen(body, r.key, r.version)
			if err != nil {
				t.Fatalf("captured %s v%d response header: %v", apiName(r.key), r.version, err)
			}
			if _, seen := responses[r]; !seen {
				responses[r] = body[hl:]
			}
		}
	}
	cap.mu.Unlock()

	files := map[string]map[string]string{} // target → name → content
	add := func(target, name, content string) {
		if files[target] == nil {
			files[target] = map[string]string{}
		}
		files[target][name] = content
	}
	for _, rt := range rewriterTargets {
		for r, body := range responses {
			if r.key == rt.key {
				add(rt.target, fmt.Sprintf("%s-v%d", strings.ToLower(apiName(r.key)), r.version), corpusEntry(body, r.version))
			}
		}
		if len(files[rt.target]) == 0 {
			t.Errorf("%s: no %s response captured", rt.target, apiName(rt.key))
		}
	}
	for r, fr := range requests {
		add("FuzzRequestHeader", fmt.Sprintf("%s-v%d", strings.ToLower(apiName(r.key)), r.version), corpusEntry(fr))
	}
	sort.Slice(streams, func(i, j int) bool { return len(streams[i]) < len(streams[j]) })
	for i, s := range streams[:min(len(streams), 6)] {
		add("FuzzRequestStream", fmt.Sprintf("client-stream-%d", i), corpusEntry(s))
		add("FuzzFilteredRequestStream", fmt.Sprintf("client-stream-%d", i), corpusEntry(s))
	}
	for r, body := range responses {
		// One whole response frame, correlation id 1, per key.
		fr := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
		fr = binary.BigEndian.AppendUint32(fr, 1)
		if r.key != keyApiVersions && responseFlexible(r.key, r.version) {
			fr[3]++
			fr = append(fr, 0)
		}
		fr = append(fr, body...)
		add("FuzzResponseStream", fmt.Sprintf("%s-v%d", strings.ToLower(apiName(r.key)), r.version), corpusEntry(r.key, r.version, fr))
	}
	seen := map[int16]bool{}
	for r := range requests {
		seen[r.key] = true
	}
	for _, k := range []int16{keyProduce, keyFetch, keyMetadata, keyApiVersions, keyFindCoordinator, 11 /* JoinGroup */} {
		if !seen[k] {
			t.Errorf("no %s request captured", apiName(k))
		}
	}

	for target, entries := range files {
		dir := filepath.Join("testdata", "fuzz", target)
		if golden.Update() {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, content := range entries {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		committed, err := os.ReadDir(dir)
		if err != nil || len(committed) == 0 {
			t.Errorf("%s: no committed seed corpus in %s (run go test -run TestFuzzCorpus -update)", target, dir)
		}
	}
}
