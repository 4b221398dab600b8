package loadgen

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// TestSendAllocationFree checks the producing hot path (pooled slot,
// payload, headers, round robin topic choice, promise) allocates nothing
// per record on average, with one topic and with several; the records
// are really produced and acknowledged.
func TestSendAllocationFree(t *testing.T) {
	c := cluster(t)
	opts, _ := kafkaconf.ClientOpts(props(t, c, planner.SecurityPlaintext))
	for _, n := range []int{1, 3} {
		r := &run{cfg: Config{Seed: 1}.WithDefaults()}
		r.topics = topicNames("alloc-"+time.Now().Format("150405.000000"), n)
		r.counts = make([]topicCounts, n)
		r.pay, _ = newEncoder(EncodingBytes, 1024)
		r.pay.fill(1)
		r.pub = newRecorder(1)
		cl, err := kgo.NewClient(append(opts, kgo.AllowAutoTopicCreation(), kgo.MaxBufferedRecords(1<<20))...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		prom := r.newPromise(ctx, nil)
		rng := rand.New(rand.NewPCG(1, 2))
		tix := 0
		send := func() {
			r.send(ctx, cl, rng, 1, tix, prom)
			if tix++; tix == n {
				tix = 0
			}
		}
		for range 2000 { // warm the pool, metadata and batches
			send()
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(5000, send)
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		cancel()
		if got := r.ackedAll.Load(); got != 7001 || r.errs.Load() != 0 {
			t.Fatalf("%d topics: %d records acknowledged (want 7001: 2000 + 5000 + AllocsPerRun's warm-up call), %d errors %v", n, got, r.errs.Load(), r.errSamples)
		}
		if allocs >= 1 {
			t.Errorf("%d topics: %.1f allocations per record, want none", n, allocs)
		}
	}
}
