package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/xp-bench/xp/planner"
)

// recordBatch encodes an uncompressed v2 record batch of values.
func recordBatch(values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func produceRequest(topic string, acks int16, version int16, values ...string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = 0
	p.Records = recordBatch(values...)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func apiVersions(rc *rawConn) *kmsg.ApiVersionsResponse {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "xp-test", "1"
	return rc.roundTrip(req).(*kmsg.ApiVersionsResponse)
}

// TestApiVersionsIntersection checks the gateway's ApiVersions answer
// against the broker's: capped where the gateway would have to decode or
// could not rewrite, withheld where it cannot route, equal elsewhere.
func TestApiVersionsIntersection(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
	g := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	direct := apiVersions(dialRaw(t, kf.ListenAddrs()[0], planner.SecurityPlaintext))
	via := apiVersions(dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext))
	got := map[int16][2]int16{}
	for _, k := range via.ApiKeys {
		got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	for _, k := range direct.ApiKeys {
		want, present := [2]int16{k.MinVersion, k.MaxVersion}, true
		switch k.ApiKey {
		case keyProduce:
			want[1] = min(want[1], maxProduceVersion)
		case keyFetch:
			want[1] = min(want[1], maxFetchVersion)
		case keySASLHandshake:
			want[0] = 0
		case keyDescribeQuorum:
			present = false
		}
		g, ok := got[k.ApiKey]
		switch {
		case ok != present:
			t.Errorf("%s: offered by the gateway %v, want %v", apiName(k.ApiKey), ok, present)
		case ok && g != want:
			t.Errorf("%s: gateway offers v%d..v%d, want v%d..v%d (broker v%d..v%d)", apiName(k.ApiKey), g[0], g[1], want[0], want[1], k.MinVersion, k.MaxVersion)
		}
		delete(got, k.ApiKey)
	}
	if len(got) > 0 {
		t.Errorf("gateway offers keys the broker does not: %v", got)
	}
	if len(via.FinalizedFeatures) != len(direct.FinalizedFeatures) || len(via.SupportedFeatures) != len(direct.SupportedFeatures) {
		t.Errorf("features changed: %d/%d finalized, %d/%d supported", len(via.FinalizedFeatures), len(direct.FinalizedFeatures), len(via.SupportedFeatures), len(direct.SupportedFeatures))
	}

}

// TestEndpointRewrites checks that every response naming brokers names the
// gateway, and that the gateway's node ports reach the node they claim.
func TestEndpointRewrites(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 3, transport: planner.SecurityPlaintext})
	g := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	upstream := map[string]bool{}
	for _, a := range kf.ListenAddrs() {
		upstream[a] = true
	}
	rc := dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext)
	checkAddr := func(what string, id int32, host string, port int32) {
		t.Helper()
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if upstream[addr] || host != "127.0.0.1" {
			t.Errorf("%s: node %d at %s is not a gateway address", what, id, addr)
		}
	}

	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"metadata v9 and every version", func(t *testing.T) {
			for v := int16(0); v <= 12; v++ {
				req := kmsg.NewPtrMetadataRequest()
				req.Version = v
				resp := rc.roundTrip(req).(*kmsg.MetadataResponse)
				if len(resp.Brokers) != 3 {
					t.Fatalf("v%d: %d brokers, want 3", v, len(resp.Brokers))
				}
				for _, b := range resp.Brokers {
					checkAddr("metadata v"+strconv.Itoa(int(v)), b.NodeID, b.Host, b.Port)
				}
			}
		}},
		{"find coordinator v3 (single)", func(t *testing.T) {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version = 3
			req.CoordinatorKey = "g1"
			resp := rc.roundTrip(req).(*kmsg.FindCoordinatorResponse)
			if resp.ErrorCode != 0 {
				t.Fatalf("error %d", resp.ErrorCode)
			}
			checkAddr("find coordinator v3", resp.NodeID, resp.Host, resp.Port)
		}},
		{"find coordinator v4 (batched)", func(t *testing.T) {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version = 4
			req.CoordinatorKeys = []string{"g1", "g2", "g3"}
			resp := rc.roundTrip(req).(*kmsg.FindCoordinatorResponse)
			if len(resp.Coordinators) != 3 {
				t.Fatalf("%d coordinators", len(resp.Coordinators))
			}
			for _, c := range resp.Coordinators {
				checkAddr("find coordinator v4", c.NodeID, c.Host, c.Port)
			}
		}},
		{"describe cluster", func(t *testing.T) {
			req := kmsg.NewPtrDescribeClusterRequest()
			req.Version = 1
			resp := rc.roundTrip(req).(*kmsg.DescribeClusterResponse)
			if len(resp.Brokers) != 3 {
				t.Fatalf("%d brokers", len(resp.Brokers))
			}
			for _, b := range resp.Brokers {
				checkAddr("describe cluster", b.NodeID, b.Host, b.Port)
			}
		}},
		{"node port reaches its node", func(t *testing.T) {
			// kfake answers ApiVersions v5 with REBOOTSTRAP_REQUIRED
			// when the node id a client names is not the node it
			// reached (KIP-1242): each gateway node port must reach
			// the node it was advertised for.
			for _, b := range rc.metadata().Brokers {
				nc := dialRaw(t, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), planner.SecurityPlaintext)
				req := kmsg.NewPtrApiVersionsRequest()
				req.Version = 5
				req.ClientSoftwareName, req.ClientSoftwareVersion = "xp-test", "1"
				cluster := *rc.metadata().ClusterID
				req.ClusterID = &cluster
				req.NodeID = b.NodeID
				resp := nc.roundTrip(req).(*kmsg.ApiVersionsResponse)
				if resp.ErrorCode != 0 {
					t.Errorf("node %d via %s:%d: ApiVersions error %d", b.NodeID, b.Host, b.Port, resp.ErrorCode)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, tc.check)
	}
}

// TestPipelining sends a burst of requests in one write, acks=0 produce
// among them, and checks every response arrives once, in order, and that
// acks=0 produce gets none. With 100 KiB records most of each produce
// request is read past the read buffer straight into the write buffer,
// stopping at the frame's end while the next frames wait in the socket.
func TestPipelining(t *testing.T) {
	cases := []struct {
		name      string
		transport string
		pad       int // bytes added to each record value
	}{
		{"small frames, plaintext", planner.SecurityPlaintext, 0},
		{"100 KiB produce frames, plaintext", planner.SecurityPlaintext, 100 << 10},
		{"100 KiB produce frames, tls", planner.SecurityTLS, 100 << 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { pipelining(t, tc.transport, tc.pad) })
	}
}

func pipelining(t *testing.T, transport string, pad int) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
	g := startGateway(t, gatewayConfig(t, kf, transport, planner.SecurityPlaintext))
	rc := dialRaw(t, g.Bootstrap(), transport)
	leader := rc.metadata()
	nc := dialRaw(t, net.JoinHostPort(leader.Brokers[0].Host, strconv.Itoa(int(leader.Brokers[0].Port))), transport)
	padding := strings.Repeat("p", pad)

	type sent struct {
		req  kmsg.Request
		corr int32
	}
	var burst []byte
	var expect []sent
	const n = 60
	for i := range n {
		var req kmsg.Request
		acks0 := false
		switch i % 4 {
		case 0:
			req = produceRequest("roundtrip", 0, 7, "acks0-"+strconv.Itoa(i)+padding)
			acks0 = true
		case 1:
			req = produceRequest("roundtrip", -1, 9, "acksall-"+strconv.Itoa(i)+padding)
		case 2:
			r := kmsg.NewPtrMetadataRequest()
			r.Version = 12
			req = r
		case 3:
			r := kmsg.NewPtrApiVersionsRequest()
			r.Version = 0
			req = r
		}
		b, corr := nc.frame(req)
		burst = append(burst, b...)
		if !acks0 {
			expect = append(expect, sent{req, corr})
		}
	}
	nc.write(burst)
	for _, e := range expect {
		resp := nc.response(e.req, e.corr)
		if pr, ok := resp.(*kmsg.ProduceResponse); ok && pr.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce corr %d: error %d", e.corr, pr.Topics[0].Partitions[0].ErrorCode)
		}
	}
	// Every acks=0 record landed too: 15 acks=0 and 15 acks=all.
	cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "roundtrip"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = 0, -1
	lt.Partitions = append(lt.Partitions, lp)
	req.Topics = append(req.Topics, lt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].Offset; got != n/2 {
		t.Fatalf("partition 0 end offset %d, want %d", got, n/2)
	}
}

// TestBadFrames sends frames the gateway must refuse: each closes only its
// own connection; a client already connected keeps working and the gateway
// accepts new connections.
func TestBadFrames(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
	cfg := gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext)
	cfg.Limits.MaxFrameBytes = 64 << 10
	g := startGateway(t, cfg)
	healthy := dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext)
	healthy.metadata()

	size := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	withSize := func(body []byte) []byte { return append(size(uint32(len(body))), body...) }
	produce11 := func() []byte {
		f, _ := (&rawConn{fmt: kmsg.NewRequestFormatter()}).frame(produceRequest("roundtrip", 1, 9, "x"))
		binary.BigEndian.PutUint16(f[6:], 11)
		return f
	}
	cases := []struct {
		name  string
		frame []byte
	}{
		{"oversize", append(size(64<<10+1), make([]byte, 128)...)},
		{"negative size", size(0x80000000)},
		{"undersize", withSize([]byte{0, 3, 0, 1})},
		{"version not offered", produce11()},
		{"produce header cut short", withSize([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0, 40, 'a'})},
		{"fetch v16 carries endpoints", func() []byte {
			f, _ := (&rawConn{fmt: kmsg.NewRequestFormatter()}).frame(&kmsg.FetchRequest{Version: 15})
			binary.BigEndian.PutUint16(f[6:], 16)
			return f
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := closedCount(g, closeBadFrame)
			rc := dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext)
			rc.write(tc.frame)
			rc.expectClosed()
			poll(t, 5*time.Second, "bad_frame close counted", func() bool { return closedCount(g, closeBadFrame) == before+1 })
			healthy.metadata()
			dialRaw(t, g.Bootstrap(), planner.SecurityPlaintext).metadata()
		})
	}
}

func closedCount(g *Gateway, reason int) uint64 { return g.metrics.closed[reason].Load() }

// TestSASLHandshakeV0 drives the raw-token SASL exchange that follows a v0
// handshake, which the gateway translates to SaslAuthenticate (kfake, like
// Kafka 4, no longer speaks v0 itself).
func TestSASLHandshakeV0(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityTLS, sasl: true})
	g := startGateway(t, gatewayConfig(t, kf, planner.SecuritySASLSSL, planner.SecurityTLS))

	// exchange runs the raw token rounds of mechanism; ok says whether the
	// connection must then serve Kafka requests.
	cases := []struct {
		name      string
		mechanism string
		tokens    func(t *testing.T) func(server []byte) []byte
		ok        bool
	}{
		{"PLAIN", "PLAIN", func(*testing.T) func([]byte) []byte {
			return func([]byte) []byte { return []byte("\x00" + saslUser + "\x00" + saslPass) }
		}, true},
		{"PLAIN wrong password", "PLAIN", func(*testing.T) func([]byte) []byte {
			return func([]byte) []byte { return []byte("\x00" + saslUser + "\x00wrong") }
		}, false},
		{"SCRAM-SHA-256", "SCRAM-SHA-256", func(t *testing.T) func([]byte) []byte {
			var sess interface {
				Challenge([]byte) (bool, []byte, error)
			}
			return func(server []byte) []byte {
				if sess == nil {
					s, first, err := scram.Auth{User: saslUser, Pass: saslPass}.AsSha256Mechanism().Authenticate(context.Background(), "")
					if err != nil {
						t.Fatal(err)
					}
					sess = s
					return first
				}
				_, next, err := sess.Challenge(server)
				if err != nil {
					t.Fatal(err)
				}
				return next
			}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, g.Bootstrap(), planner.SecuritySASLSSL)
			hs := kmsg.NewPtrSASLHandshakeRequest()
			hs.Version = 0
			hs.Mechanism = tc.mechanism
			if resp := rc.roundTrip(hs).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
				t.Fatalf("handshake error %d", resp.ErrorCode)
			}
			next := tc.tokens(t)
			var server []byte
			for range saslRounds(tc.mechanism) {
				tok := next(server)
				rc.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
				var err error
				if server, err = rc.readFrame(); err != nil {
					if tc.ok {
						t.Fatalf("raw SASL round: %v", err)
					}
					return // refused: the connection is closed
				}
			}
			if !tc.ok {
				t.Fatal("authentication with a wrong password succeeded")
			}
			if md := rc.metadata(); len(md.Brokers) != 1 {
				t.Fatalf("metadata after v0 SASL: %d brokers", len(md.Brokers))
			}
		})
	}

	t.Run("GSSAPI refused", func(t *testing.T) {
		rc := dialRaw(t, g.Bootstrap(), planner.SecuritySASLSSL)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version = 0
		hs.Mechanism = "GSSAPI"
		b, _ := rc.frame(hs)
		rc.write(b)
		rc.expectClosed()
	})
}

// TestMetricsEndpoint scrapes /metrics after traffic.
func TestMetricsEndpoint(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
	g := startGateway(t, gatewayConfig(t, kf, planner.SecurityPlaintext, planner.SecurityPlaintext))
	produce(t, franzOpts(t, []string{g.Bootstrap()}, planner.SecurityPlaintext), "roundtrip", 20)
	if !strings.HasPrefix(g.MetricsURL(), "http://127.0.0.1:") {
		t.Fatalf("metrics at %q, want loopback", g.MetricsURL())
	}
	body := httpGet(t, g.MetricsURL())
	for _, want := range []string{
		"xp_gateway_connections_total ",
		`xp_gateway_requests_total{api_key="0",api="Produce"}`,
		`xp_gateway_requests_total{api_key="3",api="Metadata"}`,
		`xp_gateway_request_bytes_total{api_key="0",api="Produce"}`,
		`xp_gateway_response_bytes_total{api_key="18",api="ApiVersions"}`,
		`xp_gateway_latency_seconds_bucket{direction="request",le="+Inf"}`,
		`xp_gateway_latency_seconds_count{direction="response"}`,
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, `xp_gateway_latency_seconds_count{direction="request"}`) {
			if n, _ := strconv.Atoi(strings.Fields(line)[1]); n == 0 {
				t.Errorf("no request latency observed: %s", line)
			}
		}
	}
}

// TestPartialNextFrame sends a whole request followed by the first bytes of
// another in one write: the whole one must reach the broker and be answered
// while the rest of the second has not arrived; then the rest, and the
// second is answered too. In the large cases more than directRead bytes of
// the second (a 300 KiB record) are outstanding, so the relay waits in a
// read straight into its write buffer while the stall timer sends the
// first request; the record is then read back through the gateway (a large
// response relayed the same way) and directly, byte for byte.
func TestPartialNextFrame(t *testing.T) {
	value := make([]byte, 300<<10)
	for i := range value {
		value[i] = byte(i*7 + i>>11)
	}
	md := &kmsg.MetadataRequest{Version: 9}
	cases := []struct {
		name      string
		transport string
		second    kmsg.Request
		cut       int // bytes of the second frame sent with the first
	}{
		{"small, plaintext", planner.SecurityPlaintext, md, 6},
		{"large, plaintext", planner.SecurityPlaintext, produceRequest("roundtrip", -1, 9, string(value)), 1000},
		{"large, tls", planner.SecurityTLS, produceRequest("roundtrip", -1, 9, string(value)), 1000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityPlaintext})
			g := startGateway(t, gatewayConfig(t, kf, tc.transport, planner.SecurityPlaintext))
			rc := dialRaw(t, g.Bootstrap(), tc.transport)
			first, corr := rc.frame(md)
			second, corr2 := rc.frame(tc.second)
			rc.write(append(append([]byte{}, first...), second[:tc.cut]...))
			if resp := rc.response(md, corr).(*kmsg.MetadataResponse); len(resp.Brokers) != 1 {
				t.Fatalf("%d brokers", len(resp.Brokers))
			}
			rc.write(second[tc.cut:])
			resp := rc.response(tc.second, corr2)
			pr, ok := resp.(*kmsg.ProduceResponse)
			if !ok {
				return
			}
			if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("produce: error %d", code)
			}
			via := consume(t, franzOpts(t, []string{g.Bootstrap()}, tc.transport), "roundtrip", 1)
			direct := consume(t, franzOpts(t, kf.ListenAddrs(), planner.SecurityPlaintext), "roundtrip", 1)
			sameRecords(t, direct, via)
			if !bytes.Equal(direct[0].Value, value) {
				t.Fatalf("the broker holds a %d-byte value that differs from the %d bytes sent", len(direct[0].Value), len(value))
			}
		})
	}
}
