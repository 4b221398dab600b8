package main

import (
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/remote"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// TestRemoteLoadFlags: the flags a remote target gives `xp loadgen` on a
// client host, parsed by that command, are the configuration the runner
// asked for, zeros included (a row's warmup_s: 0, consumer_groups: 0,
// linger_ms: 0 are values, not the flags' defaults).
func TestRemoteLoadFlags(t *testing.T) {
	tests := []struct {
		name string
		cfg  loadgen.Config
	}{
		{name: "zeros that are values", cfg: loadgen.Config{Warmup: 0, ConsumerGroups: 0, LingerMs: 0, Duration: time.Second}},
		{name: "every setting", cfg: loadgen.Config{Topics: 3, Partitions: 2, ReplicationFactor: 3, MinInsyncReplicas: 2, MessageSize: 256,
			Concurrency: 4, Producers: 2, ConsumerGroups: 2, ConsumersPerGroup: 3, LingerMs: 5, BatchBytes: 65536, Acks: "1",
			Compression: "lz4", Encoding: "avro", Warmup: 2 * time.Second, Duration: 3 * time.Second, DrainTimeout: 4 * time.Second,
			TLSVersion: "1.2", TLSCipher: "chacha20-poly1305", SASLMechanism: "plain", ConnectionChurn: 250}},
		{name: "client java", cfg: loadgen.Config{Client: planner.ClientJava, JVMOpts: []string{"-Xmx512m", "-XX:+UseG1GC"}, Duration: time.Second}},
		{name: "client librdkafka", cfg: loadgen.Config{Client: planner.ClientLibrdkafka, Duration: time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _, _ := testState()
			cmd := newLoadgenCmd(st)
			if err := cmd.ParseFlags(remote.LoadFlags(tc.cfg, []string{"198.18.0.10:9092"})); err != nil {
				t.Fatal(err)
			}
			want := tc.cfg.WithDefaults()
			f := cmd.Flags()
			for name, v := range map[string]int{"topics": want.Topics, "partitions": want.Partitions, "replication-factor": want.ReplicationFactor,
				"min-insync-replicas": want.MinInsyncReplicas, "message-size": want.MessageSize, "concurrency": want.Concurrency,
				"producers": want.Producers, "consumer-groups": want.ConsumerGroups, "consumers-per-group": want.ConsumersPerGroup,
				"linger-ms": want.LingerMs, "batch-bytes": want.BatchBytes, "connection-churn": want.ConnectionChurn} {
				if got, err := f.GetInt(name); err != nil || got != v {
					t.Errorf("--%s %d (%v), want %d", name, got, err, v)
				}
			}
			for name, v := range map[string]time.Duration{"warmup": want.Warmup, "duration": want.Duration, "drain-timeout": want.DrainTimeout} {
				if got, err := f.GetDuration(name); err != nil || got != v {
					t.Errorf("--%s %v (%v), want %v", name, got, err, v)
				}
			}
			def := func(v, d string) string {
				if v == "" {
					return d
				}
				return v
			}
			for name, v := range map[string]string{"acks": want.Acks, "compression": want.Compression, "encoding": want.Encoding, "bootstrap": "198.18.0.10:9092",
				"tls-version": def(want.TLSVersion, "default"), "tls-cipher": def(want.TLSCipher, "default"), "sasl-mechanism": want.SASLMechanism,
				"client": want.Client, "jvm-opts": strings.Join(want.JVMOpts, " ")} {
				if got, err := f.GetString(name); err != nil || got != v {
					t.Errorf("--%s %q (%v), want %q", name, got, err, v)
				}
			}
		})
	}
}
