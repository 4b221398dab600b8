package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/planner"
)

// TestCompressionCodecs sends gzip, snappy, lz4 and zstd batches through the
// gateway; a consumer through the gateway reads exactly what a direct one
// reads.
func TestCompressionCodecs(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
	g := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	cases := []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"gzip", kgo.GzipCompression()},
		{"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()},
		{"zstd", kgo.ZstdCompression()},
	}
	total := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const n = 200
			via := franzOpts(t, []string{g.Bootstrap()}, planner.SecurityPlaintext)
			produce(t, via, "compressed", n, kgo.ProducerBatchCompression(tc.codec), kgo.ProducerLinger(50*time.Millisecond))
			total += n
			got := consume(t, via, "compressed", total)
			want := consume(t, franzOpts(t, kf.ListenAddrs(), planner.SecurityPlaintext), "compressed", total)
			sameRecords(t, want, got)
		})
	}
	// The fetched batches must have been compressed, or the test proves
	// nothing: check the codec bits of the batches at rest.
	rc := dialRaw(t, kf.ListenAddrs()[0], planner.SecurityPlaintext)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxBytes = 1 << 24
	req.ReplicaID = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "compressed"
	for p := int32(0); p < 3; p++ {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes, fp.LogStartOffset = p, 1<<24, -1
		ft.Partitions = append(ft.Partitions, fp)
	}
	req.Topics = append(req.Topics, ft)
	codecs := map[int16]bool{}
	for _, p := range rc.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions {
		b := p.RecordBatches
		for len(b) >= 61 {
			var batch kmsg.RecordBatch
			l := int(int32(uint32(b[8])<<24|uint32(b[9])<<16|uint32(b[10])<<8|uint32(b[11]))) + 12
			if l > len(b) || batch.ReadFrom(b[:l]) != nil {
				break
			}
			codecs[batch.Attributes&7] = true
			b = b[l:]
		}
	}
	for c := int16(1); c <= 4; c++ {
		if !codecs[c] {
			t.Errorf("no batch with codec %d at rest (saw %v)", c, codecs)
		}
	}
}

// TestConsumerGroupOfThree runs a group of three franz-go consumers through
// the gateway: they join one by one (two rebalances), split the partitions
// between them, consume everything once, and rebalance again when one
// leaves.
func TestConsumerGroupOfThree(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 3, transport: planner.SecurityPlaintext})
	g := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	via := franzOpts(t, []string{g.Bootstrap()}, planner.SecurityPlaintext)
	const n = 300
	produce(t, via, "group", n)

	var mu sync.Mutex
	assigned := map[int]map[int32]bool{}
	seen := map[string]int{}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	members := make([]*kgo.Client, 3)
	var wg sync.WaitGroup
	for i := range members {
		// The member's set exists before the client does: it may join
		// and be assigned partitions before NewClient returns.
		mu.Lock()
		assigned[i] = map[int32]bool{}
		mu.Unlock()
		cl, err := kgo.NewClient(append(via,
			kgo.ConsumerGroup("g3"), kgo.ConsumeTopics("group"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.Balancers(kgo.RoundRobinBalancer()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range m["group"] {
					assigned[i][p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range m["group"] {
					delete(assigned[i], p)
				}
			}),
		)...)
		if err != nil {
			t.Fatal(err)
		}
		members[i] = cl
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Key)]++
					mu.Unlock()
				})
			}
		}()
		// Join one at a time so each join is a rebalance.
		poll(t, 30*time.Second, fmt.Sprintf("member %d assigned", i), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(assigned[i]) > 0
		})
	}
	spread := func() bool {
		mu.Lock()
		defer mu.Unlock()
		owners := map[int32]int{}
		for m, ps := range assigned {
			if members[m] == nil {
				continue
			}
			for p := range ps {
				owners[p]++
			}
		}
		if len(owners) != 3 {
			return false
		}
		for _, c := range owners {
			if c != 1 {
				return false
			}
		}
		return true
	}
	poll(t, 30*time.Second, "three members owning one partition each", func() bool {
		if !spread() {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		return len(assigned[0]) == 1 && len(assigned[1]) == 1 && len(assigned[2]) == 1
	})
	poll(t, 30*time.Second, "every record consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n
	})
	// One leaves: the other two take its partition.
	members[2].Close()
	mu.Lock()
	members[2] = nil
	mu.Unlock()
	poll(t, 30*time.Second, "two members covering three partitions", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(assigned[0])+len(assigned[1]) == 3
	})
	cancel()
	members[0].Close()
	members[1].Close()
	wg.Wait()
}

// TestAcksZeroFranz produces with acks=0 (no responses) through the gateway,
// pipelined, then checks every record arrived and the connection still
// serves requests that do get answers.
func TestAcksZeroFranz(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
	g := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	via := franzOpts(t, []string{g.Bootstrap()}, planner.SecurityPlaintext)
	const n = 500
	cl, err := kgo.NewClient(append(via, kgo.DefaultProduceTopic("roundtrip"), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(), kgo.MaxBufferedRecords(50))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("acks=0 produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(consume(t, via, "roundtrip", n)); got != n {
		t.Fatalf("consumed %d, want %d", got, n)
	}
}

// TestUpstreamGone stops the upstream cluster under connected clients: the
// gateway closes their connections at once (a retriable error for every
// Kafka client), refuses new ones the same way, never hangs a request, and
// serves the same client again once a cluster is back on the same ports.
//
// What it does not claim: franz-go keeps records buffered while no broker
// is reachable (it does the same connected directly), so the client-side
// check is a bounded request, not a produce.
func TestUpstreamGone(t *testing.T) {
	ports, dir := freePorts(t, 2), t.TempDir()
	kf := startUpstream(t, upstreamSpec{brokers: 2, transport: planner.SecurityPlaintext}, kfake.Ports(ports...), kfake.DataDir(dir))
	g := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	cl, err := kgo.NewClient(append(franzOpts(t, []string{g.Bootstrap()}, planner.SecurityPlaintext), kgo.DefaultProduceTopic("faults"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceOne := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	}
	if err := produceOne(); err != nil {
		t.Fatalf("before the outage: %v", err)
	}
	boot := dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext)
	md := boot.metadata()
	node := dialRaw(t, net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))), planner.SecurityPlaintext)
	node.metadata()

	kf.Close()
	t.Run("open connections are closed", func(t *testing.T) {
		boot.expectClosed()
		node.expectClosed()
	})
	t.Run("new connections are closed, not held", func(t *testing.T) {
		dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext).expectClosed()
		dialRaw(t, net.JoinHostPort(md.Brokers[1].Host, strconv.Itoa(int(md.Brokers[1].Port))), planner.SecurityPlaintext).expectClosed()
	})
	t.Run("a bounded client request fails, does not hang", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err == nil {
			t.Fatal("metadata succeeded with the upstream gone")
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("request took %v", d)
		}
		t.Logf("client error with the upstream gone: %v", err)
	})
	if n := g.metrics.closed[closeUpstreamDial].Load() + g.metrics.closed[closeUpstreamLost].Load(); n == 0 {
		t.Error("no upstream failure counted in metrics")
	}

	// Back on the same ports with the same data, the same client through
	// the same gateway recovers.
	startUpstream(t, upstreamSpec{brokers: 2, transport: planner.SecurityPlaintext}, kfake.Ports(ports...), kfake.DataDir(dir))
	done := make(chan error, 1)
	go func() { done <- produceOne() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the upstream came back: %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("produce did not complete within 40s of the upstream coming back")
	}
	dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext).metadata()
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// TestBackpressure holds a client's responses unread: once max_in_flight
// requests wait and the socket buffers are full, the gateway must stop
// reading the client rather than buffer without bound, and resume, with
// every response in order, when the client reads. Requests (30 KB client
// ids) and responses (metadata of 300 topics) are large so that the kernel
// buffers cannot hide the effect.
func TestBackpressure(t *testing.T) {
	var topics []string
	for i := range 300 {
		topics = append(topics, fmt.Sprintf("bp-%03d", i))
	}
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext}, kfake.SeedTopics(1, topics...))
	cfg := gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext)
	cfg.Limits.MaxInFlight = 4
	cfg.Limits.BufferBytes = 4096
	g := startGateway(t, cfg)
	rc := dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext)
	rc.fmt = kmsg.NewRequestFormatter(kmsg.FormatterClientID(strings.Repeat("c", 30000)))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	// 2000 requests of 30 KB and responses of 13 KB: 60 MB and 26 MB,
	// well beyond what loopback socket buffers hold (a few MB each way).
	const total = 2000
	var frames [][]byte
	var corrs []int32
	for range total {
		b, corr := rc.frame(req)
		frames = append(frames, b)
		corrs = append(corrs, corr)
	}
	done := make(chan error, 1)
	go func() {
		for _, b := range frames {
			_ = rc.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
			if _, err := rc.c.Write(b); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	relayed := func() uint64 { return g.metrics.requests[keyMetadata].Load() }
	// Wait until the gateway stops taking requests: the count holds
	// still for a second.
	last, still := relayed(), time.Now()
	poll(t, 30*time.Second, "the gateway to stop reading the client", func() bool {
		if n := relayed(); n != last {
			last, still = n, time.Now()
		}
		return time.Since(still) > time.Second
	})
	select {
	case err := <-done:
		t.Fatalf("the client wrote all %d requests without reading a response (err %v): no backpressure", total, err)
	default:
	}
	if last >= total {
		t.Fatalf("the gateway relayed all %d requests while the client read nothing", last)
	}
	t.Logf("with no response read, the gateway relayed %d of %d requests and stopped", last, total)
	for i := range total {
		body, err := rc.readFrame()
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if corr := int32(binary.BigEndian.Uint32(body)); corr != corrs[i] {
			t.Fatalf("response %d has correlation id %d, want %d", i, corr, corrs[i])
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// refusingFilter is a RecordFilter for the seam tests: it refuses produce to
// "refused", fails fetches of "broken", and round-trips everything else
// through kmsg unchanged.
type refusingFilter struct {
	mu       sync.Mutex
	produced int
	fetched  int
}

func (f *refusingFilter) ProduceRequest(ctx context.Context, req *kmsg.ProduceRequest) error {
	f.mu.Lock()
	f.produced++
	f.mu.Unlock()
	for _, t := range req.Topics {
		if t.Topic == "refused" {
			return kerr.PolicyViolation
		}
	}
	return nil
}

func (f *refusingFilter) FetchResponse(ctx context.Context, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) error {
	f.mu.Lock()
	f.fetched++
	f.mu.Unlock()
	for i := range resp.Topics {
		name := resp.Topics[i].Topic
		if n, ok := TopicName(ctx, resp.Topics[i].TopicID); ok {
			name = n
		}
		if name == "broken" {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = kerr.CorruptMessage.Code
				resp.Topics[i].Partitions[j].RecordBatches = nil
			}
		}
	}
	return nil
}

// TestRecordFilterSeam checks the seam the encrypting modes build on: a
// filter sees every produce request and fetch response, a refused produce
// is answered with the filter's error without reaching the broker, a
// per-partition fetch error reaches the client, and a filter that changes
// nothing changes no byte.
func TestRecordFilterSeam(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 2, transport: planner.SecurityPlaintext}, kfake.SeedTopics(1, "refused", "broken"))
	cfg := gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext)
	f := &refusingFilter{}
	cfg.Filters = []RecordFilter{f}
	g := startGateway(t, cfg)
	via := franzOpts(t, []string{g.Bootstrap()}, planner.SecurityPlaintext)

	t.Run("unchanged records pass byte-identical", func(t *testing.T) {
		produce(t, via, "roundtrip", 100, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
		got := consume(t, via, "roundtrip", 100)
		sameRecords(t, consume(t, franzOpts(t, kf.ListenAddrs(), planner.SecurityPlaintext), "roundtrip", 100), got)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.produced == 0 || f.fetched == 0 {
			t.Fatalf("filter saw %d produce requests and %d fetch responses", f.produced, f.fetched)
		}
	})
	t.Run("refused produce gets the filter's error", func(t *testing.T) {
		cl, err := kgo.NewClient(append(via, kgo.DefaultProduceTopic("refused"), kgo.RecordRetries(1))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("secret")}).FirstErr()
		if !errors.Is(err, kerr.PolicyViolation) {
			t.Fatalf("produce to a refused topic: %v, want POLICY_VIOLATION", err)
		}
		// Nothing reached the broker.
		cl2, _ := kgo.NewClient(franzOpts(t, kf.ListenAddrs(), planner.SecurityPlaintext)...)
		defer cl2.Close()
		req := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "refused"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		req.Topics = append(req.Topics, lt)
		resp, err := req.RequestWith(ctx, cl2)
		if err != nil {
			t.Fatal(err)
		}
		if off := resp.Topics[0].Partitions[0].Offset; off != 0 {
			t.Fatalf("refused topic has end offset %d at the broker, want 0", off)
		}
	})
	t.Run("per-partition fetch error reaches the client", func(t *testing.T) {
		produce(t, franzOpts(t, kf.ListenAddrs(), planner.SecurityPlaintext), "broken", 5)
		cl, err := kgo.NewClient(append(via, kgo.ConsumeTopics("broken"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepRetryableFetchErrors())...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatal("no fetch error before the deadline")
			}
			if fs.NumRecords() > 0 {
				t.Fatal("records of a failed partition reached the client")
			}
			var got error
			fs.EachError(func(_ string, _ int32, err error) { got = err })
			if got != nil {
				if !errors.Is(got, kerr.CorruptMessage) {
					t.Fatalf("fetch error %v, want CORRUPT_MESSAGE", got)
				}
				return
			}
		}
	})
}

// TestCloseIsPrompt closes a gateway while a client sits in the TLS
// handshake and another holds an idle relayed connection: Close must not
// wait for the 10 s handshake timeout, and both clients see their
// connection closed.
func TestCloseIsPrompt(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
	g, err := Start(context.Background(), gatewayConfig(t, kf, planner.SecurityTLS, planner.SecurityPlaintext))
	if err != nil {
		t.Fatal(err)
	}
	stalled, err := net.Dial("tcp", g.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	idle := dialRaw(t, g.Bootstrap(), planner.SecurityTLS)
	idle.metadata()
	// The stalled connection is accepted and waiting in its handshake.
	poll(t, 5*time.Second, "both connections accepted", func() bool { return g.metrics.connActive.Load() == 2 })
	start := time.Now()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	// Generous for a loaded machine, far below the handshake timeout.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	idle.expectClosed()
	_ = stalled.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := stalled.Read(make([]byte, 1)); err == nil {
		t.Fatal("stalled connection still open")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("stalled connection not closed")
	}
}

// TestTwoGateways puts two gateways in front of one cluster (the plans'
// gateways factor): a client bootstrapping from both stays on whichever
// answered its metadata, and produce and consume work across them.
func TestTwoGateways(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 3, transport: planner.SecurityPlaintext})
	g1 := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	g2 := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	both := franzOpts(t, []string{g1.Bootstrap(), g2.Bootstrap()}, planner.SecurityPlaintext)
	produce(t, both, "roundtrip", 200)
	got := consume(t, franzOpts(t, []string{g2.Bootstrap()}, planner.SecurityPlaintext), "roundtrip", 200)
	sameRecords(t, consume(t, franzOpts(t, kf.ListenAddrs(), planner.SecurityPlaintext), "roundtrip", 200), got)
	if g1.metrics.connTotal.Load()+g2.metrics.connTotal.Load() == 0 {
		t.Fatal("no connection through either gateway")
	}
	if g2.metrics.requests[keyFetch].Load() == 0 {
		t.Fatal("the consumer bootstrapped from the second gateway fetched elsewhere")
	}
}

// TestPrimedNodeListeners: with fixed node ports, the gateway opens its node
// listeners at start from its own metadata request, so a client that kept
// node addresses from before a gateway restart reaches its node before any
// metadata passed through the new gateway.
func TestPrimedNodeListeners(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
	cfg := gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext)
	base := freePorts(t, 1)[0]
	cfg.Listen.NodePortBase = &base
	g := startGateway(t, cfg)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(base)) // node 0
	poll(t, 10*time.Second, "node 0's listener to open", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if n := g.metrics.requests[keyMetadata].Load(); n != 0 {
		t.Fatalf("%d client metadata requests before the check", n)
	}
	rc := dialRaw(t, addr, planner.SecurityPlaintext)
	if resp := apiVersions(rc); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions through the primed node port: error %d", resp.ErrorCode)
	}
}

// TestCloseWhileWritingToClient: a client pipelines fetches whose answers
// (about 27 MiB) fill every socket buffer and does not read, so the
// gateway's response side waits in a write to it; the client then sends an
// oversize frame (the connection must close promptly, not once the client
// reads again, nor after TLS's 5 s close_notify deadline), or the gateway
// is closed (Close must return promptly).
func TestCloseWhileWritingToClient(t *testing.T) {
	badFrame := func(t *testing.T, g *Gateway, rc *rawConn) {
		rc.write([]byte{0x7f, 0xff, 0xff, 0xff})
		// Generous for a loaded machine, below the 5 s a TLS close
		// would wait to send its close_notify behind the stuck write.
		poll(t, 3*time.Second, "connection closed for the bad frame", func() bool { return closedCount(g, closeBadFrame) == 1 })
	}
	cases := []struct {
		name      string
		transport string
		close     func(t *testing.T, g *Gateway, rc *rawConn)
	}{
		{"bad frame from the client, plaintext", planner.SecurityPlaintext, badFrame},
		{"bad frame from the client, tls", planner.SecurityTLS, badFrame},
		{"gateway Close, plaintext", planner.SecurityPlaintext, func(t *testing.T, g *Gateway, _ *rawConn) {
			done := make(chan struct{})
			go func() { g.Close(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Close still waiting after 10 s")
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
			g := startGateway(t, gatewayConfig(t, kf, tc.transport, planner.SecurityPlaintext))
			cl, err := kgo.NewClient(append(franzOpts(t, kf.ListenAddrs(), planner.SecurityPlaintext),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20),
				kgo.ProducerBatchCompression(kgo.NoCompression()))...)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = cl.ProduceSync(ctx, &kgo.Record{Topic: "faults", Partition: 0, Value: make([]byte, 900<<10)}).FirstErr()
			cancel()
			cl.Close()
			if err != nil {
				t.Fatal(err)
			}
			rc := dialRaw(t, g.Bootstrap(), tc.transport)
			leader := rc.metadata().Brokers[0]
			nc := dialRaw(t, net.JoinHostPort(leader.Host, strconv.Itoa(int(leader.Port))), tc.transport)
			var burst []byte
			for range 30 {
				req := &kmsg.FetchRequest{Version: 11, MaxBytes: 1 << 20, Topics: []kmsg.FetchRequestTopic{{Topic: "faults",
					Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 0, PartitionMaxBytes: 1 << 20, LogStartOffset: -1}}}}}
				b, _ := nc.frame(req)
				burst = append(burst, b...)
			}
			nc.write(burst)
			// The gateway has relayed what the client's socket takes and
			// waits in a write of the rest (holding its writer).
			poll(t, 10*time.Second, "the gateway waiting to write fetch answers", func() bool {
				if g.metrics.respBytes[keyFetch].Load() < 2<<20 {
					return false
				}
				g.mu.RLock()
				defer g.mu.RUnlock()
				for p := range g.conns {
					if p.cw.mu.TryLock() {
						p.cw.mu.Unlock()
					} else {
						return true
					}
				}
				return false
			})
			tc.close(t, g, nc)
		})
	}
}
