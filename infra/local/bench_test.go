package local

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// BenchmarkModes produces 1 KiB records as fast as one franz-go client can
// (10000 buffered, linger 1 ms, acks all) through each mode's fronts for 2 s,
// side by side on one cluster: what the front and the security layer cost
// on the embedded cluster. The cluster shares the process and the cores.
func BenchmarkModes(b *testing.B) {
	c, err := Start(context.Background(), Options{Brokers: 1, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	direct, err := kgo.NewClient(kgo.SeedBrokers(c.Kfake().ListenAddrs()...))
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	val := make([]byte, 1024)
	for i := range val {
		val[i] = byte(i * 7)
	}
	run := func(b *testing.B, report bool, opts []kgo.Opt) {
		topic := fmt.Sprintf("bench-%d", time.Now().UnixNano())
		adm := kadm.NewClient(direct)
		ctx := context.Background()
		if _, err := adm.CreateTopic(ctx, 6, 1, nil, topic); err != nil {
			b.Fatal(err)
		}
		defer adm.DeleteTopic(ctx, topic)
		cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(10000))...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		var acked atomic.Int64
		promise := func(_ *kgo.Record, err error) {
			if err == nil {
				acked.Add(1)
			}
		}
		start := time.Now()
		for time.Since(start) < 2*time.Second {
			cl.Produce(ctx, &kgo.Record{Value: val}, promise)
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		rate := float64(acked.Load()) / time.Since(start).Seconds()
		if report {
			b.ReportMetric(rate, "msg/s")
			b.ReportMetric(rate*1024/(1<<20), "MiB/s")
		}
	}
	// An untimed first run: the in-memory broker's heap grows (page
	// faults) only once, so it would otherwise tax whichever mode ran first.
	run(b, false, []kgo.Opt{kgo.SeedBrokers(c.Kfake().ListenAddrs()...)})
	b.Run("kfake_direct", func(b *testing.B) { run(b, true, []kgo.Opt{kgo.SeedBrokers(c.Kfake().ListenAddrs()...)}) })
	for _, mode := range planner.DirectModes() {
		b.Run(mode, func(b *testing.B) {
			props, err := kafkaconf.ReadClientConfig(c.Modes()[mode].ClientConfig)
			if err != nil {
				b.Fatal(err)
			}
			opts, err := kafkaconf.ClientOpts(props)
			if err != nil {
				b.Fatal(err)
			}
			run(b, true, opts)
		})
	}
}
