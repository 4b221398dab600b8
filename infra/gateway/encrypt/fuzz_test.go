package encrypt

import (
	"bytes"
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/gateway/records"
)

// FuzzFetch feeds arbitrary record sets of a configured topic to the
// decrypting path: it must never panic, and a partition it passes
// without an error code must hold record batches that parse.
func FuzzFetch(f *testing.F) {
	for _, c := range append(benchCases, benchCase{"kh", "kh-bench", "bytes", records.Gzip}) {
		rt := newRoundTripperCodec(f, c.topic, c.enc, c.codec)
		rt.atRest = true
		rt.run(f)
		f.Add(c.topic, rt.rest)
		f.Add(c.topic, rt.batch)
	}
	filter, err := New(Config{Vault: newVault(f, "k1"), Topics: testRules()}, ".")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, topic string, set []byte) {
		resp := kmsg.FetchResponse{Topics: []kmsg.FetchResponseTopic{{Topic: topic, Partitions: []kmsg.FetchResponseTopicPartition{{RecordBatches: bytes.Clone(set)}}}}}
		if err := filter.FetchResponse(context.Background(), nil, &resp); err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if topic == "" {
			// No name and no id: the filter cannot know the topic and
			// withholds whatever it holds.
			if len(set) > 0 && p.ErrorCode != kerr.UnknownTopicID.Code {
				t.Fatalf("records of an unknown topic passed with code %d", p.ErrorCode)
			}
			return
		}
		if filter.ruleFor(topic) == noRule {
			if p.ErrorCode != 0 || !bytes.Equal(p.RecordBatches, set) {
				t.Fatal("a topic not configured was changed")
			}
			return
		}
		if p.ErrorCode != 0 {
			if p.RecordBatches == nil || len(p.RecordBatches) != 0 {
				t.Fatal("a failed partition must carry an empty, non-null record set")
			}
			return
		}
		w := records.Get()
		defer records.Put(w)
		if _, err := w.Rewrite(nil, p.RecordBatches, func(*records.BatchInfo, *records.Record) (bool, error) { return false, nil }); err != nil {
			t.Fatalf("delivered records do not parse: %v", err)
		}
	})
}

// FuzzProduce: arbitrary produce records either fail the request or come
// out as batches that decrypt back to the input.
func FuzzProduce(f *testing.F) {
	for _, c := range append(benchCases, benchCase{"kh", "kh-bench", "bytes", records.None}) {
		rt := newRoundTripperCodec(f, c.topic, c.enc, c.codec)
		f.Add(c.topic, rt.batch)
	}
	filter, err := New(Config{Vault: newVault(f, "k1"), Topics: testRules()}, ".")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, topic string, set []byte) {
		req := kmsg.ProduceRequest{Topics: []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{Records: set}}}}}
		if err := filter.ProduceRequest(context.Background(), &req); err != nil {
			return
		}
		resp := kmsg.FetchResponse{Topics: []kmsg.FetchResponseTopic{{Topic: topic, Partitions: []kmsg.FetchResponseTopicPartition{{RecordBatches: req.Topics[0].Partitions[0].Records}}}}}
		if err := filter.FetchResponse(context.Background(), nil, &resp); err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("what the filter encrypted does not decrypt: code %d", p.ErrorCode)
		}
		// Compare record by record (bytes can differ only where a
		// producer used a non-minimal varint, which we normalise).
		w := records.Get()
		defer records.Put(w)
		var a, b [][]byte
		collect := func(dst *[][]byte) records.RecordFunc {
			return func(_ *records.BatchInfo, r *records.Record) (bool, error) {
				*dst = append(*dst, append(append([]byte(nil), r.Value...), r.Headers...))
				return false, nil
			}
		}
		if _, err := w.Rewrite(nil, set, collect(&a)); err != nil {
			return // input did not parse but passed: a topic not configured
		}
		if _, err := w.Rewrite(nil, p.RecordBatches, collect(&b)); err != nil {
			t.Fatal(err)
		}
		if len(a) != len(b) {
			t.Fatalf("%d records in, %d out", len(a), len(b))
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				t.Fatalf("record %d differs after produce+fetch", i)
			}
		}
	})
}
