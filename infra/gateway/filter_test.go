package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partFilter fails the listed partitions of every produce request.
type partFilter struct{ fail []PartitionError }

func (f partFilter) ProduceRequest(_ context.Context, req *kmsg.ProduceRequest) error {
	var pe PartitionErrors
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			for _, x := range f.fail {
				if x.Topic == t.Topic && x.TopicID == t.TopicID && x.Partition == p.Partition {
					pe.Add(t.Topic, t.TopicID, p.Partition, x.Err)
				}
			}
		}
	}
	if len(pe.Partitions) == 0 {
		return nil
	}
	return &pe
}

func (partFilter) FetchResponse(context.Context, *kmsg.FetchRequest, *kmsg.FetchResponse) error {
	return nil
}

// produceReq is a produce request with the given partitions of each topic
// (by name, or by id when the name is empty).
func produceReq(version int16, topics map[string][]int32, ids map[string][16]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	names := make([]string, 0, len(topics))
	for n := range topics {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		rt := kmsg.NewProduceRequestTopic()
		if id, ok := ids[n]; ok {
			rt.TopicID = id
		} else {
			rt.Topic = n
		}
		for _, p := range topics[n] {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = p
			rp.Records = []byte{byte(p)}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// summary lists "topic/partition=code" of a produce response, or of a
// request's partitions (code 0).
func summary(topics []kmsg.ProduceResponseTopic) []string {
	var out []string
	for _, t := range topics {
		name := t.Topic
		if name == "" {
			name = fmt.Sprintf("id%d", t.TopicID[0])
		}
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d=%d", name, p.Partition, p.ErrorCode))
		}
	}
	slices.Sort(out)
	return out
}

func requestSummary(req *kmsg.ProduceRequest) []string {
	var out []string
	for _, t := range req.Topics {
		name := t.Topic
		if name == "" {
			name = fmt.Sprintf("id%d", t.TopicID[0])
		}
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s/%d", name, p.Partition))
		}
	}
	slices.Sort(out)
	return out
}

// TestPartialProduce: partitions a filter fails leave the request and come
// back in the merged response with their codes, by topic name (produce
// before v13) and by topic id (v13); the broker's answers are kept.
func TestPartialProduce(t *testing.T) {
	bad := errors.New("cannot encrypt")
	idA := [16]byte{7}
	for _, tc := range []struct {
		name     string
		version  int16
		req      map[string][]int32
		ids      map[string][16]byte
		fail     []PartitionError
		wantSent []string // partitions left in the request
		wantResp []string
	}{
		{
			name: "one bad partition of a topic", version: 9,
			req:      map[string][]int32{"a": {0, 1}, "b": {0}},
			fail:     []PartitionError{{Topic: "a", Partition: 1, Err: bad}},
			wantSent: []string{"a/0", "b/0"},
			wantResp: []string{"a/0=0", "a/1=87", "b/0=0"},
		},
		{
			name: "a whole topic bad", version: 9,
			req:      map[string][]int32{"a": {0}, "b": {0, 1}},
			fail:     []PartitionError{{Topic: "b", Partition: 0, Err: kerr.CorruptMessage}, {Topic: "b", Partition: 1, Err: bad}},
			wantSent: []string{"a/0"},
			wantResp: []string{"a/0=0", "b/0=2", "b/1=87"},
		},
		{
			name: "topic ids (v13)", version: 13,
			req:      map[string][]int32{"a": {0, 1}, "b": {0}},
			ids:      map[string][16]byte{"a": idA, "b": {8}},
			fail:     []PartitionError{{TopicID: idA, Partition: 0, Err: bad}},
			wantSent: []string{"id7/1", "id8/0"},
			wantResp: []string{"id7/0=87", "id7/1=0", "id8/0=0"},
		},
		{
			name: "all bad", version: 9,
			req:      map[string][]int32{"a": {0}},
			fail:     []PartitionError{{Topic: "a", Partition: 0, Err: bad}},
			wantSent: nil, wantResp: []string{"a/0=87"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := produceReq(tc.version, tc.req, tc.ids)
			failed, err := filterProduce(context.Background(), []RecordFilter{partFilter{tc.fail}}, req)
			if err != nil {
				t.Fatal(err)
			}
			if got := requestSummary(req); !slices.Equal(got, tc.wantSent) {
				t.Fatalf("sent %v, want %v", got, tc.wantSent)
			}
			var body []byte
			if len(req.Topics) == 0 {
				body = produceFailedResponse(tc.version, failed).AppendTo(nil)
			} else {
				// The broker answers what it was sent.
				resp := kmsg.NewPtrProduceResponse()
				resp.Version = tc.version
				for _, rt := range req.Topics {
					t := kmsg.NewProduceResponseTopic()
					t.Topic, t.TopicID = rt.Topic, rt.TopicID
					for _, rp := range rt.Partitions {
						p := kmsg.NewProduceResponseTopicPartition()
						p.Partition = rp.Partition
						t.Partitions = append(t.Partitions, p)
					}
					resp.Topics = append(resp.Topics, t)
				}
				if body, err = mergeProduceErrors(nil, resp.AppendTo(nil), tc.version, failed); err != nil {
					t.Fatal(err)
				}
			}
			got := kmsg.ProduceResponse{Version: tc.version}
			if err := got.ReadFrom(body); err != nil {
				t.Fatal(err)
			}
			if s := summary(got.Topics); !slices.Equal(s, tc.wantResp) {
				t.Fatalf("response %v, want %v", s, tc.wantResp)
			}
			for _, rt := range got.Topics {
				for _, p := range rt.Partitions {
					if p.ErrorCode != 0 && (p.ErrorMessage == nil || p.BaseOffset != -1) {
						t.Fatalf("failed partition %d: message %v, base offset %d", p.Partition, p.ErrorMessage, p.BaseOffset)
					}
				}
			}
		})
	}
}
