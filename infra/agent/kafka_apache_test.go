package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
)

// TestReadinessAndSCRAMOnApacheKafka runs UpsertSCRAM and WaitKafka
// against Apache Kafka (4.x from out/dist, one broker): a SCRAM-SHA-512
// user created over the plaintext listener authenticates on SASL_SSL; a
// wrong password and a broker id the cluster lacks are each reported
// within the timeout, naming the mode and what is missing.
func TestReadinessAndSCRAMOnApacheKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := kafkatest.Start(t, kafkatest.Options{})
	read := func(path string) map[string]string {
		p, err := kafkaconf.ReadClientConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	admin := read(c.Modes()[planner.SecurityPlaintext].ClientConfig)
	if err := agent.UpsertSCRAM(ctx, admin, "reader", "s3cret-reader"); err != nil {
		t.Fatal(err)
	}
	reader := read(c.Modes()[planner.SecuritySASLSSL].ClientConfig)
	reader[kafkaconf.SASLUsername], reader[kafkaconf.SASLPassword] = "reader", "s3cret-reader"
	if err := agent.WaitKafka(ctx, []agent.KafkaMode{{Name: "sasl_ssl-reader", Props: reader}}, []int32{1}, time.Minute); err != nil {
		t.Fatalf("the new SCRAM user: %v", err)
	}

	wrong := read(c.Modes()[planner.SecuritySASLSSL].ClientConfig)
	wrong[kafkaconf.SASLUsername], wrong[kafkaconf.SASLPassword] = "reader", "not-the-password"
	modes := []agent.KafkaMode{{Name: "sasl_ssl-wrong", Props: wrong}, {Name: "tls", Props: read(c.Modes()[planner.SecurityTLS].ClientConfig)}}
	err := agent.WaitKafka(ctx, modes, []int32{1, 7}, 20*time.Second)
	var nr *agent.NotReadyError
	if !errors.As(err, &nr) {
		t.Fatalf("WaitKafka: %v, want a NotReadyError", err)
	}
	got := map[string]agent.ModeNotReady{}
	for _, m := range nr.Modes {
		got[m.Mode] = m
	}
	// Each try is bounded (5 s): on a loaded machine a try can end by its
	// bound before Kafka's answer, so the cause is Kafka's refusal or the
	// bound; Kafka's refusal itself is checked below, without a bound.
	if m, ok := got["sasl_ssl-wrong"]; !ok || m.Err == nil || !slices.Contains(m.Missing, 1) ||
		!strings.Contains(strings.ToLower(m.Err.Error()), "authentication") && !errors.Is(m.Err, context.DeadlineExceeded) {
		t.Errorf("wrong password: %+v, want the mode not ready, broker 1 missing, with Kafka's authentication error", m)
	}
	opts, err := kafkaconf.ClientOpts(wrong)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a client with the wrong password: %v, want Kafka's SASL_AUTHENTICATION_FAILED", err)
	}
	if m, ok := got["tls"]; !ok || len(m.Missing) != 1 || m.Missing[0] != 7 {
		t.Errorf("broker 7: %+v, want tls missing broker 7 only", m)
	}
}
