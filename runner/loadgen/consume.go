package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consume polls cl, a member of group, until ctx ends: it counts every
// record once per group (a rebalance can deliver an offset again), checks
// its headers and digest, and records the end-to-end latency of records
// whose intended send time lies in the measurement window.
func (r *run) consume(ctx context.Context, cl *kgo.Client, group int) {
	seen := r.seen[group]
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		now := r.now()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				r.noteErr(fmt.Errorf("fetch: %w", err))
			}
		})
		fs.EachRecord(func(rec *kgo.Record) {
			var ti int64
			var dig uint64
			have := 0
			for _, h := range rec.Headers {
				switch {
				case h.Key == HeaderTime && len(h.Value) == 8:
					ti = int64(binary.BigEndian.Uint64(h.Value))
					have |= 1
				case h.Key == HeaderDigest && len(h.Value) == 8:
					dig = binary.BigEndian.Uint64(h.Value)
					have |= 2
				}
			}
			tix := 0
			if len(r.topics) > 1 {
				var ok bool
				if tix, ok = r.index[rec.Topic]; !ok {
					r.noteErr(fmt.Errorf("record %s/%d@%d from a topic this run did not produce to", rec.Topic, rec.Partition, rec.Offset))
					return
				}
			}
			// A rebalance can hand a partition over before its records
			// were all polled; count each offset once per group.
			if p := int(rec.Partition); p >= 0 && p < r.parts[tix] {
				hi := &seen[r.first[tix]+p]
				for {
					cur := hi.Load()
					if rec.Offset <= cur {
						r.duplicates.Add(1)
						return
					}
					if hi.CompareAndSwap(cur, rec.Offset) {
						break
					}
				}
			}
			r.consumedAll.Add(1)
			if have != 3 {
				r.noteErr(fmt.Errorf("record %s/%d@%d lacks the xp headers", rec.Topic, rec.Partition, rec.Offset))
				return
			}
			if Digest(rec.Key, rec.Value) != dig {
				r.noteErr(fmt.Errorf("record %s/%d@%d fails its digest check (altered in transit)", rec.Topic, rec.Partition, rec.Offset))
			}
			if sec := r.second(ti); sec >= 0 {
				r.e2e.record(sec, now-ti)
				r.consMeasured.Add(1)
				r.counts[tix].consumed.Add(1)
			} else if ti < r.warmEnd {
				r.consWarm.Add(1)
			}
		})
		r.sampleBacklog()
	}
}

// newConsumers creates the consumer clients, ConsumersPerGroup members in
// each of ConsumerGroups groups, each group reading every topic, and
// resets r.seen. It runs before any record is sent, so that every member
// holds its partitions from the first record on. One offset reset applies
// to all topics: from the end when any named topic already existed (its
// old records are not this run's), else from the start. assigned counts
// the partitions each member holds, kept by the rebalance callbacks.
func (r *run) newConsumers(existed bool, nparts int) (_ []*kgo.Client, assigned []atomic.Int64, _ error) {
	cfg := r.cfg
	start := kgo.NewOffset().AtStart()
	if existed {
		start = kgo.NewOffset().AtEnd()
	}
	count := func(m map[string][]int32) int64 {
		n := 0
		for _, t := range r.topics {
			n += len(m[t])
		}
		return int64(n)
	}
	var consumers []*kgo.Client
	assigned = make([]atomic.Int64, cfg.ConsumerGroups*cfg.ConsumersPerGroup)
	r.seen = make([][]atomic.Int64, cfg.ConsumerGroups)
	for g := range cfg.ConsumerGroups {
		r.groups = append(r.groups, GroupName(r.name, g))
		r.seen[g] = make([]atomic.Int64, nparts)
		for p := range r.seen[g] {
			r.seen[g][p].Store(-1)
		}
		for j := range cfg.ConsumersPerGroup {
			a := &assigned[g*cfg.ConsumersPerGroup+j]
			cl, err := kgo.NewClient(append(r.base[:len(r.base):len(r.base)],
				kgo.ConsumerGroup(r.groups[g]),
				kgo.ConsumeTopics(r.topics...),
				kgo.ConsumeResetOffset(start),
				kgo.DisableAutoCommit(),
				kgo.FetchMaxWait(500*time.Millisecond),
				kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { a.Add(count(m)) }),
				kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { a.Add(-count(m)) }),
				kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { a.Add(-count(m)) }),
			)...)
			if err != nil {
				closeAll(consumers)
				return nil, nil, r.fail("consumer: %v", err)
			}
			consumers = append(consumers, cl)
		}
	}
	return consumers, assigned, nil
}

// startConsumers starts one consume goroutine per consumer client; the
// returned group is done when every one has returned after ctx ended.
func (r *run) startConsumers(ctx context.Context, consumers []*kgo.Client) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i, cl := range consumers {
		wg.Add(1)
		go func() { defer wg.Done(); r.consume(ctx, cl, i/r.cfg.ConsumersPerGroup) }()
	}
	return &wg
}

// awaitAssignment waits until every group is ready: its nparts partitions
// all held, and by as many members as can hold some (a member joining
// later would trigger a rebalance mid-run). It gives up after
// 1.5 × connectTimeout, or when ctx ends.
func (r *run) awaitAssignment(ctx context.Context, assigned []atomic.Int64, nparts int) error {
	per := r.cfg.ConsumersPerGroup
	ready := func(g int) (held, members int) {
		for j := range per {
			if n := assigned[g*per+j].Load(); n > 0 {
				held += int(n)
				members++
			}
		}
		return
	}
	wait := 3 * connectTimeout / 2
	deadline := time.Now().Add(wait)
	for g := range r.cfg.ConsumerGroups {
		for {
			held, members := ready(g)
			if held == nparts && members == min(per, nparts) {
				break
			}
			if time.Now().After(deadline) {
				return r.fail("consumer group %d: %d members hold %d of %d partitions after %v", g, members, held, nparts, wait)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}
