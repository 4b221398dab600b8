package gateway

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSpliceMatchesReencode checks that a message written by the splicer,
// with some record sets replaced by shorter, longer or empty ones, is byte
// for byte what kmsg encodes for the changed message, for produce requests
// and fetch responses at flexible and non-flexible versions.
func TestSpliceMatchesReencode(t *testing.T) {
	recs := func(n int, fill byte) []byte { return bytes.Repeat([]byte{fill}, n) }
	// Record sets of 0, 100 and 300 bytes: a 300-byte set needs a
	// two-byte compact length, so replacing it with a 20-byte one
	// shortens the prefix too.
	sizes := []int{100, 300, 0, 5000}
	repl := [][]byte{recs(20, 'a'), nil, recs(400, 'b'), recs(5000, 'c')} // nil: unchanged
	for _, v := range []int16{3, 7, 8, 9, 11} {
		t.Run(fmt.Sprintf("produce_v%d", v), func(t *testing.T) {
			req := kmsg.ProduceRequest{Version: v, Acks: -1, TimeoutMillis: 1000}
			for ti := range 2 {
				tp := kmsg.ProduceRequestTopic{Topic: fmt.Sprintf("t%d", ti)}
				for pi, n := range sizes {
					tp.Partitions = append(tp.Partitions, kmsg.ProduceRequestTopicPartition{Partition: int32(pi), Records: recs(n, byte('0'+pi))})
				}
				req.Topics = append(req.Topics, tp)
			}
			msg := req.AppendTo(nil)
			got := kmsg.ProduceRequest{Version: v}
			if err := got.ReadFrom(msg); err != nil {
				t.Fatal(err)
			}
			var s splicer
			s.reset(msg, requestFlexible(keyProduce, v))
			for ti := range got.Topics {
				for pi := range got.Topics[ti].Partitions {
					p := &got.Topics[ti].Partitions[pi]
					if repl[pi] == nil {
						continue
					}
					if !s.replace(p.Records, repl[pi]) {
						t.Fatalf("replace topic %d partition %d refused", ti, pi)
					}
					p.Records = repl[pi]
				}
			}
			checkSpliced(t, &s, got.AppendTo(nil))
		})
	}
	for _, v := range []int16{4, 11, 12, 13, 16} {
		t.Run(fmt.Sprintf("fetch_v%d", v), func(t *testing.T) {
			resp := kmsg.FetchResponse{Version: v}
			tp := kmsg.FetchResponseTopic{Topic: "t", TopicID: [16]byte{1}}
			for pi, n := range sizes {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition, p.HighWatermark, p.RecordBatches = int32(pi), 42, recs(n, byte('0'+pi))
				tp.Partitions = append(tp.Partitions, p)
			}
			resp.Topics = append(resp.Topics, tp)
			msg := resp.AppendTo(nil)
			got := kmsg.FetchResponse{Version: v}
			if err := got.ReadFrom(msg); err != nil {
				t.Fatal(err)
			}
			var s splicer
			s.reset(msg, responseFlexible(keyFetch, v))
			for pi := range got.Topics[0].Partitions {
				p := &got.Topics[0].Partitions[pi]
				if repl[pi] == nil {
					continue
				}
				if !s.replace(p.RecordBatches, repl[pi]) {
					t.Fatalf("replace partition %d refused", pi)
				}
				p.RecordBatches = repl[pi]
			}
			checkSpliced(t, &s, got.AppendTo(nil))
		})
	}
}

func checkSpliced(t *testing.T, s *splicer, want []byte) {
	t.Helper()
	var out bytes.Buffer
	if err := s.writeTo(&out); err != nil {
		t.Fatal(err)
	}
	if s.size != out.Len() {
		t.Errorf("size %d, wrote %d", s.size, out.Len())
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("spliced message differs from the re-encoded one:\n got %x\nwant %x", out.Bytes(), want)
	}
}

// TestSpliceRefuses checks the cases the splicer must hand back to a
// re-encode: a field not inside the message, a null field, fields out of
// order, and a slice that is not where a length prefix says.
func TestSpliceRefuses(t *testing.T) {
	req := kmsg.ProduceRequest{Version: 9, Acks: 1}
	req.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{
		{Partition: 0, Records: bytes.Repeat([]byte{1}, 50)},
		{Partition: 1, Records: bytes.Repeat([]byte{2}, 50)},
	}}}
	msg := req.AppendTo(nil)
	var got kmsg.ProduceRequest
	got.Version = 9
	if err := got.ReadFrom(msg); err != nil {
		t.Fatal(err)
	}
	first, second := got.Topics[0].Partitions[0].Records, got.Topics[0].Partitions[1].Records
	var s splicer
	for name, try := range map[string]func() bool{
		"outside":  func() bool { return s.replace(bytes.Repeat([]byte{1}, 50), nil) },
		"null old": func() bool { return s.replace(nil, []byte{1}) },
		"null new": func() bool { return s.replace(first, nil) },
		"no prefix": func() bool {
			return s.replace(first[1:], []byte{1})
		},
		"out of order": func() bool {
			return s.replace(second, []byte{1}) && s.replace(first, []byte{1})
		},
	} {
		s.reset(msg, true)
		if try() {
			t.Errorf("%s: replace accepted", name)
		}
	}
}

// TestScratch checks that a scratch buffer outside a gateway call is new,
// and inside one is reused once released.
func TestScratch(t *testing.T) {
	if b := Scratch(context.Background(), 100); len(b) != 0 || cap(b) < 100 {
		t.Fatalf("len %d cap %d", len(b), cap(b))
	}
	var s scratch
	ctx := context.WithValue(context.Background(), scratchKey{}, &s)
	a := Scratch(ctx, 1<<20)
	b := Scratch(ctx, 1<<20)
	if cap(a) < 1<<20 || cap(b) < 1<<20 || &a[:1][0] == &b[:1][0] {
		t.Fatal("two buffers held at once must differ")
	}
	s.release()
	c := Scratch(ctx, 1000)
	if &c[:1][0] != &a[:1][0] && &c[:1][0] != &b[:1][0] {
		t.Error("a released buffer was not reused")
	}
	s.release()
}
