package encrypt

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/planner"
)

func clone(r *kgo.Record) *kgo.Record {
	c := &kgo.Record{Key: slices.Clone(r.Key), Value: slices.Clone(r.Value), Timestamp: r.Timestamp, Partition: r.Partition}
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, kgo.RecordHeader{Key: h.Key, Value: slices.Clone(h.Value)})
	}
	return c
}

// fetchOutcome consumes topic through bootstrap until want records or a
// fetch error arrive; it returns the records and the first fetch error.
func fetchOutcome(t *testing.T, bootstrap, topic string, want int) ([]*kgo.Record, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	var ferr error
	for (len(out) < want || ferr == nil) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		out = append(out, fs.Records()...)
	}
	return out, ferr
}

// TestFailuresAreVisible: what cannot be decrypted reaches the consumer as
// a partition error (other partitions still deliver), never as garbage
// and never as a silently empty fetch; what cannot be encrypted fails the
// produce.
func TestFailuresAreVisible(t *testing.T) {
	kf := startKfake(t, "v-src", "v-tamper", "v-moved", "v-mixed", "jw-src", "jw-swapped", "j-bad")
	direct := kf.ListenAddrs()[0]
	rules := append(testRules(), TopicRule{Pattern: "jw-*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingJSON, Fields: []string{"ssn", "tax"}})
	e := startGateway(t, kf, Config{Vault: newVault(t, "k1"), Topics: rules})
	other := startGateway(t, kf, Config{Vault: newVault(t, "k2"), Topics: rules})

	good, _ := testRecords("bytes", 10, 1, false)
	for _, r := range good {
		r.Partition = 1
	}
	produceTo(t, e.gw.Bootstrap(), "v-src", cloneAll(good)...)
	atRest := consume(t, direct, "v-src", 10)

	// One bad record in partition 0 and the good ones in partition 1.
	plant := func(topic string, bad *kgo.Record) {
		t.Helper()
		bad.Partition = 0
		produceTo(t, direct, topic, append(cloneAll(atRest), bad)...)
	}
	tampered := clone(atRest[0])
	tampered.Value[len(tampered.Value)-20] ^= 0x01
	plant("v-tamper", tampered)
	// A ciphertext copied from v-src to v-moved is authentic but bound to
	// v-src: it must not decrypt under another topic. (The good records
	// planted beside it are moved too, so only partition 1 decrypting
	// would be wrong: they must fail as well.)
	plant("v-moved", clone(atRest[1]))

	jw, _ := testRecords("bytes", 1, 3, false)
	jw[0].Value = []byte(`{"ssn":"123-45-6789","tax":"TX-99","n":1}`)
	if err := produce(t, e.gw.Bootstrap(), "jw-src", kgo.NoCompression(), jw); err != nil {
		t.Fatal(err)
	}
	swapped := clone(consume(t, direct, "jw-src", 1)[0])
	var obj struct{ SSN, Tax string }
	if err := jsonUnmarshal(swapped.Value, &obj); err != nil {
		t.Fatal(err)
	}
	swapped.Value = bytes.Replace(swapped.Value, []byte(obj.SSN), []byte("SSNPLACEHOLDER"), 1)
	swapped.Value = bytes.Replace(swapped.Value, []byte(obj.Tax), []byte(obj.SSN), 1)
	swapped.Value = bytes.Replace(swapped.Value, []byte("SSNPLACEHOLDER"), []byte(obj.Tax), 1)
	swapped.Partition = 0
	produceTo(t, direct, "jw-swapped", swapped)

	for _, tc := range []struct {
		name, topic string
		bootstrap   string
		wantCode    *kerr.Error
	}{
		{"tampered ciphertext", "v-tamper", e.gw.Bootstrap(), ErrCodeIntegrity},
		{"ciphertext moved to another topic", "v-moved", e.gw.Bootstrap(), ErrCodeIntegrity},
		{"envelopes swapped between fields", "jw-swapped", e.gw.Bootstrap(), ErrCodeIntegrity},
		{"key-encryption key not in the vault", "v-src", other.gw.Bootstrap(), ErrCodeMissingKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fetchOutcome(t, tc.bootstrap, tc.topic, 0)
			if !errors.Is(err, tc.wantCode) {
				t.Fatalf("fetch error %v, want %v (records %d)", err, tc.wantCode, len(got))
			}
			for _, r := range got {
				if r.Partition == 0 {
					t.Fatalf("a record of the failed partition was delivered: %q", r.Value)
				}
			}
		})
	}
	// librdkafka surfaces both codes too (and needs the failed partition's
	// record set empty rather than null, which it refuses to parse).
	for _, tc := range []struct {
		name, bootstrap, topic, want string
	}{
		{"kcat: tampered", e.gw.Bootstrap(), "v-tamper", "Broker failed to validate record"},
		{"kcat: missing key", other.gw.Bootstrap(), "v-src", "Topic authorization failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, kcatPath, "-b", tc.bootstrap, "-t", tc.topic, "-C", "-o", "beginning", "-e", "-c", "1").CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "PROTOERR") {
				t.Fatalf("kcat: %v, want a failure naming %q:\n%.2000s", err, tc.want, out)
			}
		})
	}
	t.Run("good partition delivered beside a failed one", func(t *testing.T) {
		// v-tamper: partition 1 holds ten records authentic for v-src,
		// which fail too (wrong topic); use a fresh topic whose good
		// records are genuinely its own.
		produceTo(t, e.gw.Bootstrap(), "v-mixed", cloneAll(good)...) // partition 1
		bad := clone(consume(t, direct, "v-mixed", 10)[0])
		bad.Value[len(bad.Value)-1] ^= 0x80
		bad.Partition = 0
		produceTo(t, direct, "v-mixed", bad)
		got, ferr := fetchOutcome(t, e.gw.Bootstrap(), "v-mixed", 10)
		if !errors.Is(ferr, ErrCodeIntegrity) || len(got) < 10 {
			t.Fatalf("want partition 0 failed with %v and partition 1's 10 records delivered; got %v and %d records", ErrCodeIntegrity, ferr, len(got))
		}
		for _, r := range got {
			if r.Partition != 1 {
				t.Fatalf("record of partition %d delivered", r.Partition)
			}
		}
	})
	t.Run("value that does not parse fails the produce", func(t *testing.T) {
		bad := []*kgo.Record{{Value: []byte(`{"ssn": not json`)}}
		err := produce(t, e.gw.Bootstrap(), "j-bad", kgo.NoCompression(), bad)
		if !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("produce of invalid JSON: %v, want %v", err, kerr.InvalidRecord)
		}
		if recs, _ := tryConsume(direct, "j-bad", 1, 500*time.Millisecond); len(recs) != 0 {
			t.Fatalf("the refused record reached the broker: %q", recs[0].Value)
		}
	})
}

// produceTo produces records to the partitions they name.
func produceTo(t *testing.T, bootstrap, topic string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func cloneAll(rs []*kgo.Record) []*kgo.Record {
	out := make([]*kgo.Record, len(rs))
	for i, r := range rs {
		out[i] = clone(r)
	}
	return out
}
