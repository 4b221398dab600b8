package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// loopConn is a net.Conn whose reads replay one byte stream n times and
// whose writes vanish: the relay loops run against it with no system calls,
// so a benchmark sees the gateway's own cost per request.
type loopConn struct {
	stream []byte
	left   int // replays left
	off    int
}

func (c *loopConn) Read(b []byte) (int, error) {
	if c.off == len(c.stream) {
		if c.left == 0 {
			return 0, io.EOF
		}
		c.left--
		c.off = 0
	}
	n := copy(b, c.stream[c.off:])
	c.off += n
	return n, nil
}

func (c *loopConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *loopConn) Close() error                     { return nil }
func (c *loopConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *loopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *loopConn) SetDeadline(time.Time) error      { return nil }
func (c *loopConn) SetReadDeadline(time.Time) error  { return nil }
func (c *loopConn) SetWriteDeadline(time.Time) error { return nil }
func newLoopConn(stream []byte, replays int) *loopConn {
	return &loopConn{stream: stream, left: replays - 1}
}

// benchRequests runs the request loop over frame replayed b.N times; the
// in-flight queue is drained as the broker side would.
func benchRequests(b *testing.B, g *Gateway, frame []byte) {
	b.Helper()
	client := newLoopConn(frame, b.N)
	p := newProxyConn(g, client, &loopConn{}, g.log)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-p.inflight:
			case <-p.done:
				return
			}
		}
	}()
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	if err := p.requests(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	p.close()
	<-done
}

// benchResponses runs the response loop over frame (correlation id 1)
// replayed b.N times, with b.N requests of key/version queued ahead.
func benchResponses(b *testing.B, g *Gateway, key, version int16, frame []byte) {
	b.Helper()
	upstream := newLoopConn(frame, b.N)
	p := newProxyConn(g, &loopConn{}, upstream, g.log)
	p.inflight = make(chan pending, b.N)
	for range b.N {
		p.inflight <- pending{key: key, version: version, corr: 1}
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	if err := p.responses(); err != nil {
		var ce *connError
		if !errors.As(err, &ce) || ce.reason != closeUpstreamLost {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	p.close()
}

// responseFrame is a whole response frame with correlation id 1.
func responseFrame(resp kmsg.Response) []byte {
	return appendResponseFrame(nil, 1, resp.Key() != keyApiVersions && resp.IsFlexible(), resp)
}

// BenchmarkRequestPath: CPU and allocations per request on the client to
// broker path, without system calls. Passthrough decodes nothing but the
// header (and a produce request's acks); allocations per request: 0.
// produce_256x1KiB is a request larger than the 64 KiB buffers, as the
// saturating loads send: most of it is read straight into the write buffer.
func BenchmarkRequestPath(b *testing.B) {
	g := fuzzGateway(b)
	g.cfg.Limits.BufferBytes = 64 << 10
	g.cfg.Limits.MaxInFlight = 1024
	values := make([]string, 256)
	for i := range values {
		values[i] = string(make([]byte, 1024))
	}
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))
	produce256 := fmtr.AppendRequest(nil, produceRequest("bench", -1, 9, values...), 1)
	produce16 := fmtr.AppendRequest(nil, produceRequest("bench", -1, 9, values[:16]...), 1)
	produce1 := fmtr.AppendRequest(nil, produceRequest("bench", 1, 9, values[0]), 1)
	fetch := fmtr.AppendRequest(nil, &kmsg.FetchRequest{Version: 11, MaxWaitMillis: 500, MaxBytes: 1 << 20,
		Topics: []kmsg.FetchRequestTopic{{Topic: "bench", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, FetchOffset: 100, PartitionMaxBytes: 1 << 20}}}}}, 1)
	metadata := fmtr.AppendRequest(nil, &kmsg.MetadataRequest{Version: 12}, 1)
	for _, c := range []struct {
		name  string
		frame []byte
	}{
		{"produce_256x1KiB", produce256},
		{"produce_16x1KiB", produce16},
		{"produce_1x1KiB", produce1},
		{"fetch", fetch},
		{"metadata", metadata},
	} {
		b.Run(c.name, func(b *testing.B) { benchRequests(b, g, c.frame) })
	}
	b.Run("produce_16x1KiB_noop_filter", func(b *testing.B) {
		fg := fuzzGateway(b)
		fg.cfg.Limits = g.cfg.Limits
		fg.cfg.Filters = []RecordFilter{noopFilter{}}
		benchRequests(b, fg, produce16)
	})
}

// BenchmarkResponsePath: CPU and allocations per response on the broker to
// client path. Passthrough responses (produce, fetch) are copied with 0
// allocations; rewritten ones (metadata, ApiVersions) are decoded and
// re-encoded with kmsg, which allocates per broker and topic.
// fetch_256x1KiB is a response larger than the 64 KiB buffers, as the
// saturating loads fetch.
func BenchmarkResponsePath(b *testing.B) {
	g := fuzzGateway(b)
	g.cfg.Limits.BufferBytes = 64 << 10
	for i := int32(0); i < 3; i++ {
		if _, _, err := g.route(i, "127.0.0.1", 9092+i); err != nil {
			b.Fatal(err)
		}
	}

	values := make([]string, 256)
	for i := range values {
		values[i] = string(make([]byte, 1024))
	}
	fetch256 := &kmsg.FetchResponse{Version: 11, Topics: []kmsg.FetchResponseTopic{{Topic: "bench", Partitions: []kmsg.FetchResponseTopicPartition{{Partition: 0, HighWatermark: 1 << 20, RecordBatches: recordBatch(values...)}}}}}
	values = values[:64]
	produceResp := &kmsg.ProduceResponse{Version: 9, Topics: []kmsg.ProduceResponseTopic{{Topic: "bench", Partitions: []kmsg.ProduceResponseTopicPartition{{Partition: 0, BaseOffset: 1000, LogAppendTime: -1}}}}}
	fetchResp := &kmsg.FetchResponse{Version: 11, Topics: []kmsg.FetchResponseTopic{{Topic: "bench", Partitions: []kmsg.FetchResponseTopicPartition{{Partition: 0, HighWatermark: 1 << 20, RecordBatches: recordBatch(values...)}}}}}
	md := &kmsg.MetadataResponse{Version: 12}
	for i := int32(0); i < 3; i++ {
		md.Brokers = append(md.Brokers, kmsg.MetadataResponseBroker{NodeID: i, Host: "127.0.0.1", Port: 9092 + i})
	}
	for i := range 10 {
		topic := "topic-" + string(rune('a'+i))
		t := kmsg.MetadataResponseTopic{Topic: &topic, TopicID: [16]byte{byte(i + 1)}}
		for p := int32(0); p < 6; p++ {
			t.Partitions = append(t.Partitions, kmsg.MetadataResponseTopicPartition{Partition: p, Leader: p % 3, Replicas: []int32{p % 3}, ISR: []int32{p % 3}})
		}
		md.Topics = append(md.Topics, t)
	}
	av := &kmsg.ApiVersionsResponse{Version: 3}
	for k := int16(0); k < 70; k++ {
		av.ApiKeys = append(av.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MaxVersion: 10})
	}
	for _, c := range []struct {
		name string
		resp kmsg.Response
	}{
		{"produce", produceResp},
		{"fetch_64x1KiB", fetchResp},
		{"fetch_256x1KiB", fetch256},
		{"metadata_3_brokers_10_topics", md},
		{"api_versions", av},
	} {
		b.Run(c.name, func(b *testing.B) { benchResponses(b, g, c.resp.Key(), c.resp.GetVersion(), responseFrame(c.resp)) })
	}
}

type noopFilter struct{}

func (noopFilter) ProduceRequest(context.Context, *kmsg.ProduceRequest) error { return nil }
func (noopFilter) FetchResponse(context.Context, *kmsg.FetchRequest, *kmsg.FetchResponse) error {
	return nil
}
