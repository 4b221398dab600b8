package gateway

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/planner"
)

// record is what a consumer sees of one record.
type record struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   string
	Timestamp int64
}

func (r record) String() string {
	return fmt.Sprintf("p%d@%d key=%q value=%dB headers=%s ts=%d", r.Partition, r.Offset, r.Key, len(r.Value), r.Headers, r.Timestamp)
}

func toRecord(r *kgo.Record) record {
	var h bytes.Buffer
	for _, x := range r.Headers {
		fmt.Fprintf(&h, "%s=%x;", x.Key, x.Value)
	}
	return record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Headers: h.String(), Timestamp: r.Timestamp.UnixMilli()}
}

// produce sends n records to topic through opts and waits for every ack.
func produce(t *testing.T, opts []kgo.Opt, topic string, n int, extra ...kgo.Opt) {
	t.Helper()
	cl, err := kgo.NewClient(append(append(opts, kgo.DefaultProduceTopic(topic)), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := bytes.Repeat([]byte{byte(i)}, 100+i%900)
		recs[i] = &kgo.Record{
			Key:     []byte(fmt.Sprintf("key-%d", i)),
			Value:   v,
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}},
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consume reads n records of topic from the start, in partition order.
func consume(t *testing.T, opts []kgo.Opt, topic string, n int) []record {
	t.Helper()
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byPart := map[int32][]record{}
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %d of %d records before %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch error %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			byPart[r.Partition] = append(byPart[r.Partition], toRecord(r))
			got++
		})
	}
	var out []record
	for p := int32(0); p < 64; p++ {
		out = append(out, byPart[p]...)
	}
	return out
}

func sameRecords(t *testing.T, direct, via []record) {
	t.Helper()
	if len(direct) != len(via) {
		t.Fatalf("direct read %d records, gateway read %d", len(direct), len(via))
	}
	for i := range direct {
		d, v := direct[i], via[i]
		if d.Partition != v.Partition || d.Offset != v.Offset || !bytes.Equal(d.Key, v.Key) || !bytes.Equal(d.Value, v.Value) || d.Headers != v.Headers || d.Timestamp != v.Timestamp {
			t.Fatalf("record %d differs:\ndirect  %v\ngateway %v", i, d, v)
		}
	}
}

// TestRoundTripFranz produces and consumes with franz-go through the gateway
// on every client-leg transport, and checks that what the gateway delivers
// is byte-identical to a direct read; the TLS legs with crypto/tls carrying
// the records (crypto std, the default) and with the fast path.
func TestRoundTripFranz(t *testing.T) {
	cases := []struct {
		name             string
		client, upstream string
		sasl             bool
		layer            string
	}{
		{"plaintext to plaintext", planner.SecurityPlaintext, planner.SecurityPlaintext, false, ""},
		{"tls to tls", planner.SecurityTLS, planner.SecurityTLS, false, ""},
		{"mtls to mtls", planner.SecurityMTLS, planner.SecurityMTLS, false, ""},
		{"sasl_ssl to sasl over tls", planner.SecuritySASLSSL, planner.SecurityTLS, true, ""},
		{"tls to plaintext", planner.SecurityTLS, planner.SecurityPlaintext, false, ""},
		{"plaintext to mtls", planner.SecurityPlaintext, planner.SecurityMTLS, false, ""},
		{"tls to tls through the fast path", planner.SecurityTLS, planner.SecurityTLS, false, planner.GatewayCryptoFast},
		{"mtls to mtls through the fast path", planner.SecurityMTLS, planner.SecurityMTLS, false, planner.GatewayCryptoFast},
		{"sasl_ssl to sasl over tls through the fast path", planner.SecuritySASLSSL, planner.SecurityTLS, true, planner.GatewayCryptoFast},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kf := startUpstream(t, upstreamSpec{brokers: 3, transport: tc.upstream, sasl: tc.sasl})
			cfg := gatewayConfig(t, kf, tc.client, tc.upstream)
			cfg.Crypto = tc.layer
			g := startGateway(t, cfg)
			const n = 300
			topic := "roundtrip"
			via := franzOpts(t, []string{g.Bootstrap()}, tc.client)
			produce(t, via, topic, n)
			got := consume(t, via, topic, n)
			directTransport := tc.upstream
			if tc.sasl {
				directTransport = planner.SecuritySASLSSL
			}
			want := consume(t, franzOpts(t, kf.ListenAddrs(), directTransport), topic, n)
			sameRecords(t, want, got)
		})
	}
}
