package agent

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/planner"
)

// embeddedModes starts xp's embedded cluster (kfake behind a front per
// security mode) with 3 brokers and returns its modes, SASL PLAIN as a
// fifth one.
func embeddedModes(t *testing.T) (*local.Cluster, []KafkaMode) {
	t.Helper()
	c, err := local.Start(context.Background(), local.Options{Brokers: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var modes []KafkaMode
	for _, name := range planner.DirectModes() {
		props, err := kafkaconf.ReadClientConfig(c.Modes()[name].ClientConfig)
		if err != nil {
			t.Fatal(err)
		}
		modes = append(modes, KafkaMode{Name: name, Props: props})
	}
	plain, err := kafkaconf.ReadClientConfig(c.SASLPlainConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c, append(modes, KafkaMode{Name: "sasl_ssl-plain", Props: plain})
}

func clone(p map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range p {
		out[k] = v
	}
	return out
}

// TestWaitKafka checks readiness against the embedded cluster through every
// mode (plaintext, TLS, mTLS, SASL SCRAM-SHA-512 and PLAIN): ready when all
// is there; within the timeout, an error naming the mode, the brokers
// missing and the cause when a broker, a listener or the trust is wrong.
func TestWaitKafka(t *testing.T) {
	_, modes := embeddedModes(t)
	byName := map[string]KafkaMode{}
	for _, m := range modes {
		byName[m.Name] = m
	}
	otherCA, err := pki.New(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	// A port with nothing listening: a mode whose listener is not there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	wrongCA := clone(byName["tls"].Props)
	wrongCA[kafkaconf.SSLCALocation] = otherCA.CAPath()
	noListener := clone(byName["plaintext"].Props)
	noListener[kafkaconf.BootstrapServers] = closed
	wrongPassword := clone(byName["sasl_ssl"].Props)
	wrongPassword[kafkaconf.SASLPassword] = "not-the-password"
	noCert := clone(byName["mtls"].Props)
	delete(noCert, kafkaconf.SSLCertificate)
	delete(noCert, kafkaconf.SSLKey)

	cases := []struct {
		name    string
		modes   []KafkaMode
		brokers []int32
		// want is "" for ready, else what the error must say.
		want []string
	}{
		{"every mode ready", modes, []int32{0, 1, 2}, nil},
		{"a broker that is not there", modes[:2], []int32{0, 1, 2, 7},
			[]string{"mode plaintext: brokers 7 not seen", "mode tls: brokers 7 not seen"}},
		{"wrong CA", []KafkaMode{byName["plaintext"], {Name: "tls", Props: wrongCA}}, []int32{0, 1, 2},
			[]string{"mode tls: brokers 0, 1, 2 not seen", "certificate signed by unknown authority"}},
		{"no listener", []KafkaMode{{Name: "plaintext", Props: noListener}}, []int32{0, 1, 2},
			[]string{"mode plaintext: brokers 0, 1, 2 not seen", "connection refused"}},
		{"wrong SASL password", []KafkaMode{{Name: "sasl_ssl", Props: wrongPassword}}, []int32{0, 1, 2},
			[]string{"mode sasl_ssl: brokers 0, 1, 2 not seen"}},
		{"mtls without a client certificate", []KafkaMode{{Name: "mtls", Props: noCert}}, []int32{0, 1, 2},
			[]string{"mode mtls: brokers 0, 1, 2 not seen"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			timeout := 2 * time.Second
			start := time.Now()
			err := WaitKafka(context.Background(), tc.modes, tc.brokers, timeout)
			took := time.Since(start)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var nr *NotReadyError
			if !errors.As(err, &nr) {
				t.Fatalf("got %v, want a NotReadyError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if took > timeout+2*time.Second {
				t.Errorf("took %v with a timeout of %v", took, timeout)
			}
			for _, m := range nr.Modes {
				if m.Mode == "plaintext" && tc.name == "wrong CA" {
					t.Errorf("the plaintext mode was ready but is reported: %+v", m)
				}
			}
		})
	}
}

// TestUpsertSCRAM creates a SCRAM-SHA-512 (and SCRAM-SHA-256) user through an admin connection
// on kfake with SASL enabled (the embedded cluster's fronts keep their own
// user list, so kfake itself is the server that must accept the new
// credential), then logs in as that user.
func TestUpsertSCRAM(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin-secret"), kfake.User("PLAIN", "bob", "bob-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	admin := map[string]string{
		kafkaconf.BootstrapServers: strings.Join(kf.ListenAddrs(), ","),
		kafkaconf.SecurityProtocol: "sasl_plaintext", kafkaconf.SASLMechanism: "PLAIN",
		kafkaconf.SASLUsername: "admin", kafkaconf.SASLPassword: "admin-secret",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	login := func(user, pass string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(kf.ListenAddrs()...),
			kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		if err != nil {
			return err
		}
		defer cl.Close()
		lctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		defer cancel()
		_, err = kadm.NewClient(cl).BrokerMetadata(lctx)
		return err
	}
	if err := login("xp", "s3cret"); err == nil {
		t.Fatal("the user logs in before it was created")
	}
	if err := UpsertSCRAM(ctx, admin, "xp", "s3cret"); err != nil {
		t.Fatal(err)
	}
	if err := login("xp", "s3cret"); err != nil {
		t.Fatalf("the created SCRAM-SHA-512 user cannot log in: %v", err)
	}
	if err := login("xp", "wrong"); err == nil {
		t.Error("a wrong password logs in")
	}
	// The credentials are SCRAM-SHA-256 and SCRAM-SHA-512 with xp's
	// iteration count.
	cl, _ := kgo.NewClient(mustOpts(t, admin)...)
	defer cl.Close()
	d, err := kadm.NewClient(cl).DescribeUserSCRAMs(ctx, "xp")
	if err != nil {
		t.Fatal(err)
	}
	got := d["xp"].CredInfos
	mechs := map[kadm.ScramMechanism]int32{}
	for _, c := range got {
		mechs[c.Mechanism] = c.Iterations
	}
	if len(got) != 2 || mechs[kadm.ScramSha512] != SCRAMIterations || mechs[kadm.ScramSha256] != SCRAMIterations {
		t.Errorf("credentials %+v, want SCRAM-SHA-256 and SCRAM-SHA-512 with %d iterations", got, SCRAMIterations)
	}

	// A connection that may not alter credentials is answered with an
	// error every try until the context ends; every try is the same
	// request, so the last error is still the broker's answer.
	bob := clone(admin)
	bob[kafkaconf.SASLUsername], bob[kafkaconf.SASLPassword] = "bob", "bob-secret"
	sctx, scancel := context.WithTimeout(ctx, time.Second)
	defer scancel()
	tryTimeout = 200 * time.Millisecond
	defer func() { tryTimeout = 5 * time.Second }()
	err = UpsertSCRAM(sctx, bob, "xp2", "pw")
	if err == nil || !strings.Contains(err.Error(), "SCRAM-SHA-512 user xp2 not created") || !strings.Contains(err.Error(), "CLUSTER_AUTHORIZATION_FAILED") {
		t.Errorf("a user without the right to alter credentials: %v", err)
	}
}

func mustOpts(t *testing.T, props map[string]string) []kgo.Opt {
	t.Helper()
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestWaitKafkaSeesBrokersJoin: a broker that registers after readiness
// began is seen at a later try, as brokers of a starting Apache Kafka
// cluster join one by one (kfake with one node; a second is added once
// readiness has asked for the cluster's brokers twice).
func TestWaitKafkaSeesBrokersJoin(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	asked := make(chan struct{}, 100)
	c.ControlKey(kmsg.Metadata.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		select {
		case asked <- struct{}{}:
		default:
		}
		return nil, nil, false // observe only
	})
	props := map[string]string{kafkaconf.BootstrapServers: c.ListenAddrs()[0]}
	done := make(chan error, 1)
	go func() {
		done <- WaitKafka(context.Background(), []KafkaMode{{Name: "plaintext", Props: props}}, []int32{0, 1}, 20*time.Second)
	}()
	for range 2 {
		select {
		case <-asked:
		case err := <-done:
			t.Fatalf("readiness ended (%v) before it asked for the brokers twice", err)
		}
	}
	if _, _, err := c.AddNode(1, 0); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("node 1 joined but readiness did not see it: %v", err)
	}
}

// TestWaitKafkaReportsLastCompleteTry: when the overall timeout cuts a
// try short, what is reported missing is what the last complete try saw
// (broker 7), not every broker with the deadline as cause (kfake answers
// the first Metadata request and holds every later one past the timeout).
func TestWaitKafkaReportsLastCompleteTry(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	release := make(chan struct{})
	defer close(release)
	var answered atomic.Int32
	c.ControlKey(kmsg.Metadata.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if answered.Add(1) > 1 {
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	props := map[string]string{kafkaconf.BootstrapServers: c.ListenAddrs()[0]}
	err = WaitKafka(context.Background(), []KafkaMode{{Name: "plaintext", Props: props}}, []int32{0, 7}, 2*time.Second)
	var nr *NotReadyError
	if !errors.As(err, &nr) || len(nr.Modes) != 1 {
		t.Fatalf("WaitKafka: %v, want one mode not ready", err)
	}
	if m := nr.Modes[0]; !slices.Equal(m.Missing, []int32{7}) || m.Err != nil {
		t.Errorf("reported %+v, want broker 7 missing with no error (what the answered try saw)", m)
	}
	if answered.Load() < 2 {
		t.Errorf("kfake saw %d Metadata requests, want a second (held) try", answered.Load())
	}
}
