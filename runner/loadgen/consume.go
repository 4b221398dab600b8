package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

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
