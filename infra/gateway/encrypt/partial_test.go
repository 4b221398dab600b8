package encrypt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/xp-bench/xp/infra/gateway/records"
)

// endOffsets are the end offsets of a topic's two partitions, read from
// the broker directly.
func endOffsets(t *testing.T, direct, topic string) [2]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(direct))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out [2]int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("%s[%d]: %v", topic, o.Partition, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	return out
}

// TestProducePartialFailure: when some partitions of one produce request
// cannot be encrypted, only they fail (INVALID_RECORD, nothing of theirs
// reaches the broker); the request's other partitions, of the same topic
// or of another, are encrypted, land and read back byte-identical.
func TestProducePartialFailure(t *testing.T) {
	kf := startKfake(t, "v-ok", "j-badvals", "j-mixed")
	direct := kf.ListenAddrs()[0]
	e := startGateway(t, kf, Config{Vault: newVault(t, "k1"), Topics: testRules()})

	good, pls := testRecords(EncodingJSON, 6, 11, false)
	type sent struct {
		rec     *kgo.Record
		wantErr error
	}
	var batch []sent
	add := func(topic string, partition int32, value []byte, wantErr error) {
		batch = append(batch, sent{&kgo.Record{Topic: topic, Partition: partition, Value: value}, wantErr})
	}
	for i, r := range good {
		add("v-ok", int32(i%2), r.Value, nil)
	}
	for i := range 3 {
		add("j-badvals", 0, fmt.Appendf(nil, "not json %d", i), kerr.InvalidRecord)
	}
	for _, r := range good[:4] {
		add("j-mixed", 0, r.Value, nil)
	}
	add("j-mixed", 1, []byte(`{"ssn": `), kerr.InvalidRecord)

	// One producer, one linger window: every batch goes in one request.
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.gw.Bootstrap()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(200*time.Millisecond), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(batch))
	for i, s := range batch {
		wg.Add(1)
		cl.Produce(ctx, s.rec, func(_ *kgo.Record, err error) { errs[i] = err; wg.Done() })
	}
	wg.Wait()
	for i, s := range batch {
		switch {
		case s.wantErr == nil && errs[i] != nil:
			t.Errorf("%s[%d] record %d: %v, want success", s.rec.Topic, s.rec.Partition, i, errs[i])
		case s.wantErr != nil && !errors.Is(errs[i], s.wantErr):
			t.Errorf("%s[%d] record %d: error %v, want %v", s.rec.Topic, s.rec.Partition, i, errs[i], s.wantErr)
		}
	}

	for _, tc := range []struct {
		topic string
		want  [2]int64 // end offsets at the broker
	}{
		{"v-ok", [2]int64{3, 3}},
		{"j-badvals", [2]int64{0, 0}},
		{"j-mixed", [2]int64{4, 0}},
	} {
		if got := endOffsets(t, direct, tc.topic); got != tc.want {
			t.Errorf("%s: end offsets %v at the broker, want %v", tc.topic, got, tc.want)
		}
	}
	// What landed is encrypted at rest and reads back as produced.
	for _, r := range consume(t, direct, "v-ok", 6) {
		for _, g := range good {
			if bytes.Equal(r.Value, g.Value) {
				t.Fatalf("v-ok offset %d is plaintext at rest", r.Offset)
			}
		}
	}
	for _, r := range consume(t, direct, "j-mixed", 4) {
		if bytes.Contains(r.Value, []byte(pls[r.Offset].ssn)) {
			t.Fatalf("j-mixed offset %d: ssn in plaintext at rest", r.Offset)
		}
	}
	back := consume(t, e.gw.Bootstrap(), "v-ok", 6)
	for _, r := range back {
		if want := good[int(r.Offset)*2+int(r.Partition)].Value; !bytes.Equal(r.Value, want) {
			t.Fatalf("v-ok[%d] offset %d read back differs", r.Partition, r.Offset)
		}
	}
	for _, r := range consume(t, e.gw.Bootstrap(), "j-mixed", 4) {
		if !bytes.Equal(r.Value, good[r.Offset].Value) {
			t.Fatalf("j-mixed offset %d read back differs", r.Offset)
		}
	}
}

// TestProducePartialFailureRaw sends one hand-made produce request (so
// that its partitions are known to travel together) holding a good and a
// bad partition: with acks=all the response carries the broker's answer
// for the good one and the gateway's INVALID_RECORD, with its reason, for
// the bad one; with acks=0 the good partition still lands. A request
// whose partitions all fail is answered by the gateway alone.
func TestProducePartialFailureRaw(t *testing.T) {
	kf := startKfake(t, "v-raw-all", "j-raw-all", "v-raw-none", "j-raw-none", "j-raw-only")
	direct := kf.ListenAddrs()[0]
	e := startGateway(t, kf, Config{Vault: newVault(t, "k1"), Topics: testRules()})

	recs, _ := testRecords(EncodingJSON, 3, 12, false)
	var good []records.Record
	for i, r := range recs {
		good = append(good, records.Record{OffsetDelta: int32(i), Value: r.Value})
	}
	goodSet, err := records.BuildBatch(records.None, 1_750_000_000_000, good)
	if err != nil {
		t.Fatal(err)
	}
	badSet, err := records.BuildBatch(records.None, 1_750_000_000_000, []records.Record{{Value: []byte("<xml/>")}})
	if err != nil {
		t.Fatal(err)
	}
	request := func(parts ...struct {
		topic string
		set   []byte
	}) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.TimeoutMillis = 10000
		for _, p := range parts {
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = p.topic
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = bytes.Clone(p.set)
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	type part = struct {
		topic string
		set   []byte
	}
	type end struct {
		topic string
		end   int64
	}
	for _, tc := range []struct {
		name     string
		acks     kgo.Acks
		parts    []part
		wantCode map[string]int16 // per topic; absent: no response
		wantEnd  []end            // partition 0 end offsets at the broker, good ones first
	}{
		{"acks=all, one good one bad", kgo.AllISRAcks(), []part{{"v-raw-all", goodSet}, {"j-raw-all", badSet}},
			map[string]int16{"v-raw-all": 0, "j-raw-all": kerr.InvalidRecord.Code}, []end{{"v-raw-all", 3}, {"j-raw-all", 0}}},
		{"acks=0, one good one bad", kgo.NoAck(), []part{{"v-raw-none", goodSet}, {"j-raw-none", badSet}},
			nil, []end{{"v-raw-none", 3}, {"j-raw-none", 0}}},
		{"acks=all, all bad", kgo.AllISRAcks(), []part{{"j-raw-only", badSet}},
			map[string]int16{"j-raw-only": kerr.InvalidRecord.Code}, []end{{"j-raw-only", 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Produce before v13 names topics; pin it so this request can.
			cl, err := kgo.NewClient(kgo.SeedBrokers(e.gw.Bootstrap()), kgo.MaxVersions(kversion.V3_9_0()),
				kgo.RequiredAcks(tc.acks), kgo.DisableIdempotentWrite())
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := request(tc.parts...).RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int16{}
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					got[rt.Topic] = rp.ErrorCode
					if rp.ErrorCode != 0 && (rp.ErrorMessage == nil || !strings.Contains(*rp.ErrorMessage, "does not parse")) {
						t.Errorf("%s: error message %v, want the reason", rt.Topic, rp.ErrorMessage)
					}
				}
			}
			if tc.wantCode != nil && fmt.Sprint(got) != fmt.Sprint(tc.wantCode) {
				t.Fatalf("partition codes %v, want %v", got, tc.wantCode)
			}
			if tc.wantCode == nil && len(got) != 0 {
				t.Fatalf("acks=0 got a response %v", got)
			}
			for _, w := range tc.wantEnd {
				// acks=0 has no answer to wait for: poll the broker (the
				// good partition first, so that the bad one is checked
				// after the request was handled).
				deadline := time.Now().Add(10 * time.Second)
				for endOffsets(t, direct, w.topic)[0] != w.end && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				if got := endOffsets(t, direct, w.topic)[0]; got != w.end {
					t.Fatalf("%s: end offset %d at the broker, want %d", w.topic, got, w.end)
				}
			}
		})
	}
}
