package encrypt

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/planner"
)

// TestRequireEncryption: on a topic whose rule requires encryption, a
// fetched partition holding a record without an envelope (written straight
// to the broker, or with the plaintext marker) fails with the code of a
// decrypt failure, and no record of it is delivered; records produced
// through the gateway are delivered; a topic without the option passes
// the same plaintext unchanged.
func TestRequireEncryption(t *testing.T) {
	kf := startKfake(t, "req-good", "req-plain", "req-marker", "opt-plain", "reqf-none")
	direct := kf.ListenAddrs()[0]
	rules := []TopicRule{
		{Pattern: "req-*", Mode: planner.SecurityEncrypt, RequireEncryption: true},
		{Pattern: "reqf-*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingJSON, Fields: []string{"ssn"}, RequireEncryption: true},
		{Pattern: "opt-*", Mode: planner.SecurityEncrypt},
	}
	e := startGateway(t, kf, Config{Vault: newVault(t, "k1"), Topics: rules})
	gw := e.gw.Bootstrap()

	good, _ := testRecords("bytes", 5, 1, false)
	produceTo(t, gw, "req-good", cloneAll(good)...)
	plain := &kgo.Record{Partition: 0, Value: []byte("written around the gateway")}
	produceTo(t, direct, "req-plain", clone(plain))
	produceTo(t, direct, "opt-plain", clone(plain))
	marked := clone(plain)
	marked.Headers = []kgo.RecordHeader{{Key: HeaderKey, Value: []byte("0")}}
	produceTo(t, direct, "req-marker", marked)
	// Through the gateway, but with none of the fields to encrypt: left
	// plain by the gateway, so refused on fetch as well.
	produceTo(t, gw, "reqf-none", &kgo.Record{Partition: 0, Value: []byte(`{"name":"no ssn here"}`)})

	for _, tc := range []struct {
		name, topic string
		wantErr     error
		wantRecords int
	}{
		{"encrypted through the gateway", "req-good", nil, len(good)},
		{"plaintext written around the gateway", "req-plain", ErrCodeIntegrity, 0},
		{"plaintext marker written around the gateway", "req-marker", ErrCodeIntegrity, 0},
		{"field record with none of the fields", "reqf-none", ErrCodeIntegrity, 0},
		{"plaintext on a topic without the option", "opt-plain", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantErr == nil {
				got := consume(t, gw, tc.topic, tc.wantRecords)
				if tc.topic == "opt-plain" && string(got[0].Value) != string(plain.Value) {
					t.Fatalf("got %q, want the plaintext unchanged", got[0].Value)
				}
				return
			}
			got, err := fetchOutcome(t, gw, tc.topic, 0)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("fetch error %v, want %v (records %d)", err, tc.wantErr, len(got))
			}
			for _, r := range got {
				if r.Partition == 0 {
					t.Fatalf("a record of the refused partition was delivered: %q", r.Value)
				}
			}
		})
	}
}
