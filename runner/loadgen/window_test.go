package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWindow drives a closed-loop window the way the load generator does:
// one goroutine acquires, several release out of order. The bound holds,
// every acquire completes (no lost wake-up), and a cancelled context
// frees a parked acquirer.
func TestWindow(t *testing.T) {
	for _, c := range []struct {
		name      string
		size, n   int
		releasers int
	}{
		{"one in flight", 1, 20_000, 1},
		{"two in flight", 2, 20_000, 3},
		{"ten thousand in flight", 10_000, 200_000, 4},
		{"odd size", 13, 50_000, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWindow(c.size)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			work := make(chan struct{}, c.size)
			var peak atomic.Int64
			var wg sync.WaitGroup
			for range c.releasers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						w.release()
					}
				}()
			}
			for i := 0; i < c.n; i++ {
				if !w.acquire(ctx) {
					t.Fatalf("acquire %d of %d failed: %v (a lost wake-up)", i, c.n, ctx.Err())
				}
				if in := w.inflight.Load(); in > peak.Load() {
					peak.Store(in)
				}
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			if p := peak.Load(); p > int64(c.size) {
				t.Errorf("%d in flight, window is %d", p, c.size)
			}
			if in := w.inflight.Load(); in != 0 {
				t.Errorf("%d still in flight after every release", in)
			}
		})
	}
	t.Run("cancel frees a parked acquirer", func(t *testing.T) {
		w := newWindow(1)
		ctx, cancel := context.WithCancel(context.Background())
		if !w.acquire(ctx) {
			t.Fatal("first acquire failed")
		}
		done := make(chan bool)
		go func() { done <- w.acquire(ctx) }()
		cancel()
		select {
		case ok := <-done:
			if ok {
				t.Error("acquire on a full window succeeded after cancel")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("parked acquirer did not return after cancel")
		}
	})
}
