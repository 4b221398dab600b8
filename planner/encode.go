package planner

import "strconv"

// appendRowJSON writes r as one JSON object with the same bytes as
// encoding/json's Marshal (fields in Row's order), without reflection.
func appendRowJSON(b []byte, r *Row) []byte {
	str := func(k, v string) {
		b = append(b, ',')
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, v)
	}
	num := func(k string, v int64) {
		b = append(b, ',')
		b = appendString(b, k)
		b = append(b, ':')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, `{"campaign":`...)
	b = appendString(b, r.Campaign)
	str("run", r.Run)
	str("cell", r.Cell)
	str("pair", r.Pair)
	num("replicate", int64(r.Replicate))
	num("block", int64(r.Block))
	num("order", int64(r.Order))
	num("seed", r.Seed)
	str("treatment", r.Treatment)
	str("baseline", r.Baseline)
	str("security", r.Security)
	num("brokers", int64(r.Brokers))
	num("message_size", int64(r.MessageSize))
	str("acks", r.Acks)
	if r.TargetRate.IsMax() {
		str("target_rate", "max")
	} else {
		num("target_rate", int64(r.TargetRate))
	}
	str("platform", r.Platform)
	str("instance_type", r.InstanceType)
	num("partitions", int64(r.Partitions))
	num("topics", int64(r.Topics))
	num("replication_factor", int64(r.ReplicationFactor))
	num("min_insync_replicas", int64(r.MinInsyncReplicas))
	num("producers", int64(r.Producers))
	num("consumer_groups", int64(r.ConsumerGroups))
	num("consumers_per_group", int64(r.ConsumersPerGroup))
	num("concurrency", int64(r.Concurrency))
	num("linger_ms", int64(r.LingerMs))
	num("batch_bytes", int64(r.BatchBytes))
	str("compression", r.Compression)
	str("encoding", r.Encoding)
	b = append(b, `,"encrypt_fields":`...)
	if r.EncryptFields == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, f := range r.EncryptFields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, f)
		}
		b = append(b, ']')
	}
	str("field_cipher", r.FieldCipher)
	num("gateways", int64(r.Gateways))
	str("gateway_kind", r.GatewayKind)
	str("gateway_transport", r.GatewayTransport)
	str("gateway_crypto", r.GatewayCrypto)
	num("warmup_s", int64(r.WarmupS))
	num("duration_s", int64(r.DurationS))
	num("drain_timeout_s", int64(r.DrainTimeoutS))
	str("kafka_version", r.KafkaVersion)
	str("client", r.Client)
	return append(b, '}')
}
