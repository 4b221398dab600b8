package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/kafkaconf"
)

// KafkaMode is one way into a Kafka cluster: a mode's name (plaintext,
// tls, mtls, sasl_ssl, ...) and its client properties (librdkafka names,
// as kafkaconf reads them).
type KafkaMode struct {
	Name  string
	Props map[string]string
}

// NotReadyError is a cluster that was not ready within the timeout: per
// mode, the brokers it did not see answer and the last error, if any.
type NotReadyError struct {
	Timeout time.Duration
	Modes   []ModeNotReady
}

// ModeNotReady is one mode of a NotReadyError.
type ModeNotReady struct {
	Mode    string
	Missing []int32
	Err     error
}

func (e *NotReadyError) Error() string {
	var parts []string
	for _, m := range e.Modes {
		s := fmt.Sprintf("mode %s: brokers %s not seen", m.Mode, joinIDs(m.Missing))
		if len(m.Missing) == 0 {
			s = fmt.Sprintf("mode %s: not ready", m.Mode)
		}
		if m.Err != nil {
			s += " (" + m.Err.Error() + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("kafka not ready after %v: %s", e.Timeout, strings.Join(parts, "; "))
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

// WaitKafka returns once, through every mode, the cluster's metadata lists
// every broker of brokers and each of them answers an ApiVersions request
// on that mode's listener (TLS handshake, client certificate and SASL
// authentication included), and a group coordinator is found (with every
// partition of __consumer_offsets led, where the cluster lists it). It polls until timeout; then it returns a
// *NotReadyError naming each mode that was not ready, the brokers missing
// and the last error. It knows nothing of Apache Kafka beyond the protocol,
// so any Kafka-protocol cluster can be checked with it.
func WaitKafka(ctx context.Context, modes []KafkaMode, brokers []int32, timeout time.Duration) error {
	if len(modes) == 0 || len(brokers) == 0 {
		return errors.New("agent: kafka readiness needs at least one mode and one broker id")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		mu   sync.Mutex
		bad  []ModeNotReady
		wg   sync.WaitGroup
		errs []error
	)
	for _, m := range modes {
		opts, err := kafkaconf.ClientOpts(m.Props)
		if err != nil {
			errs = append(errs, fmt.Errorf("agent: mode %s: %w", m.Name, err))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if nr := waitMode(ctx, m.Name, opts, brokers); nr != nil {
				mu.Lock()
				bad = append(bad, *nr)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(bad) == 0 {
		return nil
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Mode < bad[j].Mode })
	return &NotReadyError{Timeout: timeout, Modes: bad}
}

// tryTimeout bounds one try of a readiness check or SCRAM upsert, so one
// hung connection cannot use up the whole timeout without a retry.
var tryTimeout = 5 * time.Second

// waitMode polls one mode until it is ready (nil) or ctx ends (what was
// still missing).
func waitMode(ctx context.Context, name string, opts []kgo.Opt, brokers []int32) *ModeNotReady {
	missing := slices.Clone(brokers)
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("xp-ready"))...)
	if err != nil {
		return &ModeNotReady{Mode: name, Missing: missing, Err: err}
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var (
		last  error
		tried bool
	)
	for {
		tctx, cancel := context.WithTimeout(ctx, tryTimeout)
		m, err := checkMode(tctx, cl, adm, brokers)
		cancel()
		if len(m) == 0 && err == nil {
			return nil
		}
		// A try cut short by the overall deadline knows nothing (every
		// broker missing, the deadline as cause): the try before it, which
		// ran to its end, says what was really missing.
		if ctx.Err() != nil && tried {
			return &ModeNotReady{Mode: name, Missing: missing, Err: last}
		}
		missing, last, tried = m, err, true
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return &ModeNotReady{Mode: name, Missing: missing, Err: last}
		case <-t.C:
		}
	}
}

// checkMode is one try: the brokers not seen answering, and why. It asks
// a broker for the cluster's brokers every time: kadm's BrokerMetadata
// answers from the client's cache, which keeps the brokers of its first
// answer for minutes, while a cluster that is starting registers its
// brokers one by one.
func checkMode(ctx context.Context, cl *kgo.Client, adm *kadm.Client, brokers []int32) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	md, err := req.RequestWith(ctx, cl)
	if err != nil {
		return slices.Clone(brokers), err
	}
	seen := map[int32]bool{}
	for _, b := range md.Brokers {
		seen[b.NodeID] = true
	}
	var missing []int32
	for _, id := range brokers {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return missing, nil
	}
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return slices.Clone(brokers), err
	}
	var errs []error
	for _, id := range brokers {
		v, ok := vs[id]
		switch {
		case !ok:
			missing = append(missing, id)
		case v.Err != nil:
			missing = append(missing, id)
			errs = append(errs, fmt.Errorf("broker %d: %w", id, v.Err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return missing, err
	}
	return nil, groupCoordinator(ctx, adm)
}

// readyGroup is the consumer group whose coordinator readiness asks for.
const readyGroup = "xp-ready"

// groupCoordinator says why the cluster has no group coordinator yet, nil
// once it has. The first FindCoordinator makes Apache Kafka create
// __consumer_offsets (50 partitions, replicated), which on a busy cluster
// takes seconds: a load's consumer group must not spend its time waiting
// for that.
func groupCoordinator(ctx context.Context, adm *kadm.Client) error {
	for _, r := range adm.FindGroupCoordinators(ctx, readyGroup) {
		if r.Err != nil {
			return fmt.Errorf("group coordinator: %w", r.Err)
		}
	}
	tds, err := adm.ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		return fmt.Errorf("group coordinator: %w", err)
	}
	for _, td := range tds {
		if td.Err != nil {
			// kfake keeps offsets without such a topic.
			if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				continue
			}
			return fmt.Errorf("group coordinator: %s: %w", td.Topic, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("group coordinator: %s partition %d has no leader yet (%v)", td.Topic, p.Partition, p.Err)
			}
		}
	}
	return nil
}

// SCRAMIterations is the iteration count of the SCRAM credentials
// UpsertSCRAM creates: 4096, kafka-configs.sh's default (Kafka accepts 4096
// to 16384).
const SCRAMIterations = 4096

// UpsertSCRAM creates, or replaces, user's SCRAM-SHA-512 and SCRAM-SHA-256
// credentials (sasl_mechanism scram-sha-512 and scram-sha-256) through
// the connection props describe (Kafka's kafka-configs.sh --alter
// --add-config 'SCRAM-SHA-512=[...]', i.e. AlterUserSCRAMCredentials). The
// password is salted here; only the salted form travels. It retries until
// ctx ends, so it may be called as soon as the brokers are starting.
func UpsertSCRAM(ctx context.Context, props map[string]string, user, password string) error {
	if user == "" || password == "" {
		return errors.New("agent: a SCRAM user needs a name and a password")
	}
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		return fmt.Errorf("agent: scram admin connection: %w", err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("xp-scram"))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// One mechanism a request: Kafka refuses a request naming one user
	// twice (DUPLICATE_RESOURCE).
	for _, mech := range []kadm.ScramMechanism{kadm.ScramSha512, kadm.ScramSha256} {
		if err := upsertSCRAM(ctx, adm, user, password, mech); err != nil {
			return err
		}
	}
	return nil
}

// upsertSCRAM creates or replaces user's credential of one mechanism,
// retrying until ctx ends.
func upsertSCRAM(ctx context.Context, adm *kadm.Client, user, password string, mech kadm.ScramMechanism) error {
	var last error
	for {
		// A fresh request every try: kadm fills in the salt and salted
		// password in place, and refuses both with a password.
		up := []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: SCRAMIterations, Password: password}}
		tctx, cancel := context.WithTimeout(ctx, tryTimeout)
		res, err := adm.AlterUserSCRAMs(tctx, nil, up)
		cancel()
		if err == nil {
			err = res.Error()
		}
		if err == nil {
			return nil
		}
		last = err
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("agent: %s user %s not created: %w", mech, user, last)
		case <-t.C:
		}
	}
}
