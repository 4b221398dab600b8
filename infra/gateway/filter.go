package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RecordFilter is the seam for gateways that change records (the encrypt and
// field_encrypt modes). The gateway calls it only when one is configured:
// a passthrough gateway never decodes produce requests or fetch responses.
//
// The gateway decodes the message with kmsg at the version the client
// negotiated, calls every filter in order, and sends it on. Record
// batches in the message alias the frame buffer: a filter may replace them
// (building the new ones in place, or in Scratch) but must not keep
// references after it returns. A filter changes record sets and, in fetch
// responses, partition error codes; the gateway sends the message's other
// fields as they came (it writes the original frame around the new record
// sets when only they changed). Topic ids (produce and
// fetch v13+) resolve with TopicName.
//
// Filters are called from many connections at once and must be safe for
// concurrent use.
type RecordFilter interface {
	// ProduceRequest sees a produce request before it goes upstream.
	//
	// A *PartitionErrors (found with errors.As) fails only the
	// partitions it lists: the gateway removes them from the request
	// (whatever their records hold by then never goes upstream), sends
	// the rest on, and merges the listed errors into the broker's
	// response, as Kafka itself answers each partition of a produce
	// request on its own. If it lists every partition, the gateway
	// answers the request itself; with acks=0 the failed partitions are
	// dropped and logged. Any other error fails the whole request:
	// nothing goes upstream and every partition is answered with the
	// error's Kafka code (a *kerr.Error), or INVALID_RECORD for other
	// errors; an acks=0 request is dropped and logged.
	ProduceRequest(ctx context.Context, req *kmsg.ProduceRequest) error
	// FetchResponse sees a fetch response before it goes to the client,
	// with the request that asked for it. A partition whose records
	// cannot be restored should get its own ErrorCode (and no records);
	// an error return gives every partition the error's Kafka code (a
	// *kerr.Error), or UNKNOWN_SERVER_ERROR for other errors, and drops
	// all records.
	FetchResponse(ctx context.Context, req *kmsg.FetchRequest, resp *kmsg.FetchResponse) error
}

// PartitionErrors is the error a RecordFilter's ProduceRequest returns
// when some partitions of the request cannot be filtered; the others go
// upstream (see RecordFilter).
type PartitionErrors struct {
	Partitions []PartitionError
}

// PartitionError is one failed partition of a produce request: the topic
// as the request names it (name, or id from produce v13), the partition
// and why. The client is answered with Err's Kafka code (a *kerr.Error),
// or INVALID_RECORD for other errors, and Err's text as the error message.
type PartitionError struct {
	Topic     string
	TopicID   [16]byte
	Partition int32
	Err       error
}

// Add appends a failed partition.
func (e *PartitionErrors) Add(topic string, id [16]byte, partition int32, err error) {
	e.Partitions = append(e.Partitions, PartitionError{Topic: topic, TopicID: id, Partition: partition, Err: err})
}

func (e *PartitionErrors) Error() string {
	if len(e.Partitions) == 0 {
		return "no partition failed"
	}
	p := e.Partitions[0]
	msg := fmt.Sprintf("topic %s partition %d: %v", topicLabel(p.Topic, p.TopicID), p.Partition, p.Err)
	if n := len(e.Partitions) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more partitions)", n)
	}
	return msg
}

func topicLabel(name string, id [16]byte) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("id %x", id)
}

// filterProduce runs the filters over req. Partitions a filter fails are
// removed from req before the next filter sees it and returned; err is an
// error that fails the whole request.
func filterProduce(ctx context.Context, filters []RecordFilter, req *kmsg.ProduceRequest) (failed []PartitionError, err error) {
	for _, f := range filters {
		err = f.ProduceRequest(ctx, req)
		var pe *PartitionErrors
		if !errors.As(err, &pe) {
			if err != nil {
				return failed, err
			}
			continue
		}
		failed = append(failed, pe.Partitions...)
		removePartitions(req, pe.Partitions)
		if len(req.Topics) == 0 {
			break
		}
	}
	return failed, nil
}

// removePartitions drops the failed partitions from req, and topics left
// with none.
func removePartitions(req *kmsg.ProduceRequest, failed []PartitionError) {
	topics := req.Topics[:0]
	for _, t := range req.Topics {
		parts := t.Partitions[:0]
		for _, p := range t.Partitions {
			if !isFailed(failed, t.Topic, t.TopicID, p.Partition) {
				parts = append(parts, p)
			}
		}
		if t.Partitions = parts; len(parts) > 0 {
			topics = append(topics, t)
		}
	}
	req.Topics = topics
}

func isFailed(failed []PartitionError, topic string, id [16]byte, partition int32) bool {
	for _, f := range failed {
		if f.Partition == partition && f.Topic == topic && f.TopicID == id {
			return true
		}
	}
	return false
}

// failedPartition is the produce response of one failed partition.
func failedPartition(f PartitionError) kmsg.ProduceResponseTopicPartition {
	rp := kmsg.NewProduceResponseTopicPartition()
	rp.Partition = f.Partition
	rp.ErrorCode = errorCode(f.Err, kerr.InvalidRecord.Code)
	rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
	msg := f.Err.Error()
	rp.ErrorMessage = &msg
	return rp
}

// addFailed adds the failed partitions to resp, under their topic's entry
// when the response has one.
func addFailed(resp *kmsg.ProduceResponse, failed []PartitionError) {
	for _, f := range failed {
		i := slices.IndexFunc(resp.Topics, func(t kmsg.ProduceResponseTopic) bool {
			return t.Topic == f.Topic && t.TopicID == f.TopicID
		})
		if i < 0 {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = f.Topic, f.TopicID
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, failedPartition(f))
	}
}

// produceFailedResponse answers a request whose partitions all failed.
func produceFailedResponse(version int16, failed []PartitionError) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = version
	addFailed(resp, failed)
	return resp
}

// mergeProduceErrors appends to dst the broker's produce response body
// with the failed partitions added.
func mergeProduceErrors(dst, body []byte, version int16, failed []PartitionError) ([]byte, error) {
	resp := kmsg.ProduceResponse{Version: version}
	if err := resp.ReadFrom(body); err != nil {
		return dst, fmt.Errorf("produce v%d response: %w", version, err)
	}
	addFailed(&resp, failed)
	return resp.AppendTo(dst), nil
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
