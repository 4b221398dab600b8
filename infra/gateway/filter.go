package gateway

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RecordFilter is the seam for gateways that change records (the encrypt and
// field_encrypt modes). The gateway calls it only when one is configured:
// a passthrough gateway never decodes produce requests or fetch responses.
//
// The gateway decodes the message with kmsg at the version the client
// negotiated, calls every filter in order, and re-encodes it. Record
// batches in the message alias the frame buffer: a filter may replace them
// but must not keep references after it returns. Topic ids (produce and
// fetch v13+) resolve with TopicName.
//
// Filters are called from many connections at once and must be safe for
// concurrent use.
type RecordFilter interface {
	// ProduceRequest sees a produce request before it goes upstream. An
	// error fails the whole request: nothing goes upstream and every
	// partition is answered with the error's Kafka code (a *kerr.Error),
	// or INVALID_RECORD for other errors; an acks=0 request is dropped
	// and logged. Per-partition failure is not expressible here because
	// Kafka applies a produce request's partitions independently and the
	// client would see a partial success it cannot tell from a full one.
	ProduceRequest(ctx context.Context, req *kmsg.ProduceRequest) error
	// FetchResponse sees a fetch response before it goes to the client,
	// with the request that asked for it. A partition whose records
	// cannot be restored should get its own ErrorCode (and no records);
	// an error return gives every partition the error's Kafka code (a
	// *kerr.Error), or UNKNOWN_SERVER_ERROR for other errors, and drops
	// all records.
	FetchResponse(ctx context.Context, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) error
}

type topicNamesKey struct{}

// topicNamer resolves topic ids learned from metadata responses.
type topicNamer interface {
	topicName(id [16]byte) (string, bool)
}

// TopicName resolves a topic id seen in a produce or fetch message passed to
// a RecordFilter, from the metadata responses the gateway has relayed (a
// client learns topic ids only from metadata, so a client using an id has
// made the gateway see it).
func TopicName(ctx context.Context, id [16]byte) (string, bool) {
	n, ok := ctx.Value(topicNamesKey{}).(topicNamer)
	if !ok {
		return "", false
	}
	return n.topicName(id)
}

// WithTopicNames returns ctx resolving topic ids through names, for callers
// (tests, benchmarks) that drive a RecordFilter without a gateway.
func WithTopicNames(ctx context.Context, names map[[16]byte]string) context.Context {
	return context.WithValue(ctx, topicNamesKey{}, mapNamer(names))
}

type mapNamer map[[16]byte]string

func (m mapNamer) topicName(id [16]byte) (string, bool) { s, ok := m[id]; return s, ok }

// errorCode is the Kafka error code a filter error maps to.
func errorCode(err error, fallback int16) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return fallback
}

// produceErrorResponse answers every partition of req with code.
func produceErrorResponse(req *kmsg.ProduceRequest, code int16, msg string) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
			if msg != "" {
				m := msg
				rp.ErrorMessage = &m
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// failFetch gives every partition of resp code and drops its records.
func failFetch(resp *kmsg.FetchResponse, code int16) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			p := &resp.Topics[i].Partitions[j]
			p.ErrorCode = code
			// Empty, not null: librdkafka rejects a null record set.
			p.RecordBatches = []byte{}
		}
	}
}
