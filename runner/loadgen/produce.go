package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// slot is a pooled record with its header storage, so steady-state
// producing allocates nothing per record. rec must stay the first field:
// promises get *kgo.Record and convert back.
type slot struct {
	rec  kgo.Record
	hdrs [2]kgo.RecordHeader
	hb   [16]byte
	buf  []byte
	ti   int64
	tix  int // index of the record's topic in run.topics
}

var slotPool = sync.Pool{New: func() any {
	s := new(slot)
	s.hdrs[0].Key, s.hdrs[1].Key = HeaderTime, HeaderDigest
	s.hdrs[0].Value, s.hdrs[1].Value = s.hb[0:8:8], s.hb[8:16:16]
	return s
}}

// newPromise returns the one promise a producer hands every record: it
// records the publish latency from the intended send time, counts, returns
// the slot to the pool and frees a closed-loop slot (win, nil in open
// loop). ctx is the producing context; failures caused by its end are not
// errors.
func (r *run) newPromise(ctx context.Context, win *window) func(*kgo.Record, error) {
	pctx := ctx
	return func(rec *kgo.Record, err error) {
		s := (*slot)(unsafe.Pointer(rec))
		ti, tix := s.ti, s.tix
		if err != nil {
			// Records failed because the run ended (interrupt, or the
			// drain timed out) are reported by those, not as errors.
			if !(pctx.Err() != nil && errors.Is(err, pctx.Err())) {
				r.noteErr(fmt.Errorf("produce: %w", err))
			}
		} else {
			ack := r.now()
			r.ackedAll.Add(1)
			if sec := r.second(ti); sec >= 0 {
				r.pub.record(sec, ack-ti)
				r.pubMeasured.Add(1)
				r.counts[tix].published.Add(1)
			} else if ti < r.warmEnd {
				r.pubWarm.Add(1)
			}
		}
		slotPool.Put(s)
		if win != nil {
			win.release()
		}
	}
}

// send produces one record with intended time ti to topic tix.
func (r *run) send(ctx context.Context, cl *kgo.Client, rng *rand.Rand, ti int64, tix int, promise func(*kgo.Record, error)) {
	s := slotPool.Get().(*slot)
	val, dig := r.pay.next(rng, s.buf)
	if r.pay.encoding != EncodingBytes {
		s.buf = val
	}
	binary.BigEndian.PutUint64(s.hb[0:8], uint64(ti))
	binary.BigEndian.PutUint64(s.hb[8:16], dig)
	s.ti, s.tix = ti, tix
	s.rec = kgo.Record{Topic: r.topics[tix], Value: val, Headers: s.hdrs[:]}
	cl.Produce(ctx, &s.rec, promise)
}

// sendGrace is how long after the window closes a producer may still send
// records that were due inside it (their lateness is in the send-delay
// histogram); later ones are never sent, a shortfall the rate check sees.
const sendGrace = time.Second

// openLoop sends record i at t0 + i/rate, at once when behind. It sleeps
// only when ahead, so at high rates one wake-up sends every record that has
// come due. Records go to the topics in turn, starting at topic tix.
func (r *run) openLoop(ctx context.Context, cl **kgo.Client, ch *churner, rng *rand.Rand, tix int, rate float64) {
	// The pacer owns its thread and sleeps with nanosleep: Go's timers
	// wake about 1 ms late on Linux, which would be all of the send delay.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, applied := hintLatency()
	defer restore()
	r.pacerPriority.CompareAndSwap(nil, &applied)
	var ps pacerSched
	defer ps.stop(&r.sched) // before restore: on the pacer's own thread
	stop := r.measEnd + int64(sendGrace)
	// ctx, not a deadline context: kgo fails buffered records whose
	// context ends, and records due in the window must be delivered.
	pctx := ctx
	promise := r.newPromise(ctx, nil)
	period := 1e9 / rate
	for i := int64(0); ; i++ {
		ti := r.t0 + int64(float64(i)*period)
		if ti >= r.measEnd {
			return
		}
		now := r.now()
		if ti > now {
			if !r.paceUntil(ctx, ti) {
				return
			}
			now = r.now()
		}
		if now >= stop || pctx.Err() != nil {
			if due := int64(math.Ceil(float64(r.measEnd-ti) / period)); due > 0 {
				r.unsent.Add(due)
			}
			return
		}
		if sec := r.second(ti); sec >= 0 {
			ps.start()
			r.sendDelay.record(sec, now-ti)
		}
		r.send(pctx, *cl, rng, ti, tix, promise)
		if tix++; tix == len(r.topics) {
			tix = 0
		}
		if !ch.tick(pctx, ti) {
			return
		}
	}
}

// closedLoop keeps InFlight records in flight; the intended send time is
// the moment a slot frees. Records go to the topics in turn, starting at
// topic tix.
func (r *run) closedLoop(ctx context.Context, cl **kgo.Client, ch *churner, rng *rand.Rand, tix int) {
	pctx := ctx
	win := newWindow(r.cfg.InFlight())
	promise := r.newPromise(ctx, win)
	if !sleepUntil(pctx, r.at(r.t0)) {
		return
	}
	for win.acquire(pctx) {
		now := r.now()
		if now >= r.measEnd {
			win.inflight.Add(-1)
			return
		}
		r.send(pctx, *cl, rng, now, tix, promise)
		if tix++; tix == len(r.topics) {
			tix = 0
		}
		if !ch.tick(pctx, now) {
			return
		}
	}
}

// window bounds a closed loop's records in flight. One producer goroutine
// acquires; promises release from franz-go's goroutines. A full window
// parks the producer until an eighth of it has freed, so at high
// concurrency the producer wakes once per many acknowledgements instead
// of once per record: a wake-up per record would spend the closed loop's
// CPU in the scheduler rather than on records.
type window struct {
	max, low int64 // park at max in flight; wake at low or fewer
	inflight atomic.Int64
	waiting  atomic.Bool
	wake     chan struct{} // capacity 1
}

func newWindow(n int) *window {
	return &window{max: int64(n), low: int64(n - max(1, n/8)), wake: make(chan struct{}, 1)}
}

// acquire takes a slot, parking while the window is full; false when ctx
// ended first.
func (w *window) acquire(ctx context.Context) bool {
	for {
		if w.inflight.Load() < w.max {
			if ctx.Err() != nil {
				return false
			}
			w.inflight.Add(1) // the only acquirer: nothing raced in
			return true
		}
		// Announce the wait, then look again: a release either sees
		// waiting or has already lowered inflight for this check.
		w.waiting.Store(true)
		if w.inflight.Load() < w.max {
			w.waiting.Store(false)
			continue
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			w.waiting.Store(false)
			return false
		}
		w.waiting.Store(false)
	}
}

// release frees a slot and wakes a parked producer once the window has
// drained to low. Every record is released (franz-go calls each promise
// exactly once, failures included), so a parked producer always wakes.
func (w *window) release() {
	if w.inflight.Add(-1) <= w.low && w.waiting.Load() {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// sleepUntil sleeps until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	if d < time.Millisecond {
		time.Sleep(d)
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// paceUntil sleeps until t (Unix ns): long waits on a timer that ctx can
// cut short, the last 2 ms with nanosleep on the locked thread (wakes
// within about 0.1 ms where a Go timer wakes about 1 ms late), never for
// less than pacerWake.
func (r *run) paceUntil(ctx context.Context, t int64) bool {
	const fine = 2 * time.Millisecond
	if d := time.Duration(t - r.now()); d > fine {
		if !sleepUntil(ctx, time.Now().Add(d-fine)) {
			return false
		}
	}
	for {
		d := t - r.now()
		if d <= 0 {
			return ctx.Err() == nil
		}
		ts := syscall.NsecToTimespec(max(d, int64(pacerWake)))
		syscall.Nanosleep(&ts, nil) // EINTR: loop recomputes the rest
	}
}

// producerOpts are the producer clients' options from the config: the
// batching and compression asked for, acks (idempotence only with acks
// all), a delivery timeout of the drain timeout, and a buffer of a second
// of records at the target rate (at least 10000), so a broker hiccup shows
// as publish latency, and only a longer one blocks the pacer (and then
// shows as send delay).
func (r *run) producerOpts() []kgo.Opt {
	cfg := r.cfg
	codec, _ := compression(cfg.Compression)
	inFlight := 0
	if cfg.Rate == 0 {
		inFlight = cfg.InFlight()
	}
	popts := []kgo.Opt{
		kgo.DefaultProduceTopic(r.topics[0]),
		kgo.ProducerLinger(time.Duration(cfg.LingerMs) * time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(cfg.BatchBytes)),
		kgo.ProducerBatchCompression(codec),
		kgo.MaxBufferedRecords(max(10000, 2*inFlight, int(cfg.Rate)/cfg.Producers)),
		kgo.RecordDeliveryTimeout(cfg.DrainTimeout),
		// The run's topics were just created: Apache Kafka can answer
		// UNKNOWN_TOPIC_OR_PARTITION for a moment after CreateTopics
		// (KRaft applies new metadata asynchronously), which franz-go
		// would turn into failed records after 4 tries. Retry instead,
		// within the delivery timeout above.
		kgo.UnknownTopicRetries(-1),
	}
	switch cfg.Acks {
	case "0":
		popts = append(popts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	case "1":
		popts = append(popts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	default:
		popts = append(popts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	return popts
}

// producerClientOpts are a producer client's options: the run's base,
// producerOpts and the hook counting its connections.
func (r *run) producerClientOpts() []kgo.Opt {
	opts := append(r.base[:len(r.base):len(r.base)], r.producerOpts()...)
	if r.conns != nil {
		opts = append(opts, kgo.WithHooks(producerHook{r.conns}))
	}
	return opts
}

// newProducers creates the Producers producer clients.
func (r *run) newProducers() ([]*kgo.Client, error) {
	var producers []*kgo.Client
	for range r.cfg.Producers {
		cl, err := kgo.NewClient(r.producerClientOpts()...)
		if err != nil {
			closeAll(producers)
			return nil, r.fail("producer: %v", err)
		}
		producers = append(producers, cl)
	}
	return producers, nil
}

// startProducers starts one goroutine per producer client, each with its
// own random stream derived from the seed and its own first topic: at its
// share of the rate (open loop), or keeping its records in flight (closed
// loop). The returned group is done when every producer has stopped
// sending.
func (r *run) startProducers(ctx context.Context, producers []*kgo.Client) *sync.WaitGroup {
	cfg := r.cfg
	var wg sync.WaitGroup
	for k := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(k)+1))
			var ch *churner
			if cfg.ConnectionChurn > 0 {
				ch = &churner{r: r, every: cfg.ConnectionChurn, cl: &producers[k]}
			}
			if cfg.Rate > 0 {
				r.openLoop(ctx, &producers[k], ch, rng, r.firstTopic(k), float64(cfg.Rate)/float64(cfg.Producers))
			} else {
				r.closedLoop(ctx, &producers[k], ch, rng, r.firstTopic(k))
			}
		}()
	}
	return &wg
}
