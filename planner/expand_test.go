package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func mustSpec(t testing.TB, src string) *Spec {
	t.Helper()
	s, err := ParseSpec("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	return s
}

// expandRows expands src and reads the rows back through ValidatePlan, so
// every expansion a test makes is also checked by the validator.
func expandRows(t testing.TB, src string) ([]Row, Summary, []byte) {
	t.Helper()
	var b bytes.Buffer
	sum, err := Expand(mustSpec(t, src), &b)
	if err != nil {
		t.Fatalf("expand: %v", err)
	}
	out := slices.Clone(b.Bytes())
	rows, err := ValidatePlan(&b, "t.jsonl")
	if err != nil {
		t.Fatalf("the expansion does not validate:\n%v", err)
	}
	return rows, sum, out
}

const fixedBase = "fixed: {brokers: 3, message_size: 1024, acks: all, target_rate: 1000}\n"

func TestExpandCountsAndDrops(t *testing.T) {
	cases := []struct {
		name        string
		spec        string
		rows, cells int64
		sets        int64
		dropped     map[string]int64
	}{
		{"issue example", exampleSpec, 15, 5, 6, map[string]int64{"exclude entry 1": 1}},
		{"replication impossible", "campaign: c\nfactors:\n  security: [plaintext, tls]\n  brokers: [1, 3]\n  replication_factor: [1, 3]\n  min_insync_replicas: [1, 2]\nfixed: {message_size: 1024, acks: all, target_rate: 1000}\n",
			// (brokers, rf, isr): (1,1,1) (3,1,1) (3,3,1) (3,3,2) run.
			8, 8, 4, map[string]int64{ReasonRFOverBrokers: 4, ReasonISROverRF: 4}},
		{"field_encrypt needs structure", "campaign: c\nreplicates: 2\nbaseline: sasl_ssl\nfactors:\n  security: [sasl_ssl, field_encrypt]\n  encoding: [bytes, json, avro]\n" + fixedBase,
			10, 5, 6, map[string]int64{ReasonFieldEncryptBytes: 1}},
		{"structured too large", "campaign: c\nfactors:\n  security: [tls]\n  encoding: [bytes, json, avro]\nfixed: {brokers: 1, message_size: 80, acks: all, target_rate: 1000}\n",
			2, 2, 2, map[string]int64{ReasonStructuredTooBig: 1}},
		{"concurrency needs max", "campaign: c\nfactors:\n  security: [tls]\n  concurrency: [1, 10]\n  target_rate: [100, max]\nfixed: {brokers: 1, message_size: 100, acks: all}\n",
			3, 3, 3, map[string]int64{ReasonConcurrencyOpen: 1}},
		{"level out of range", "campaign: c\nfactors:\n  security: [tls]\n  message_size: [8, 1024, 2097152]\nfixed: {brokers: 1, acks: all, target_rate: 100}\n",
			1, 1, 1, map[string]int64{"message_size outside 16..1048576": 2}},
		{"baseline lost", "campaign: c\nfactors:\n  security: [plaintext, tls, mtls]\n  message_size: [1024, 2048]\nfixed: {brokers: 1, acks: all, target_rate: 100}\nexclude:\n  - {security: plaintext, message_size: 2048}\n",
			3, 3, 1, map[string]int64{"exclude entry 1": 1, ReasonNoBaseline: 2}},
		{"derived default rf", "campaign: c\nfactors:\n  security: [tls]\n  brokers: [1, 2, 5]\nfixed: {message_size: 100, acks: all, target_rate: 100}\n",
			3, 3, 3, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows, sum, _ := expandRows(t, tc.spec)
			if int64(len(rows)) != tc.rows || sum.Rows != tc.rows || sum.Cells != tc.cells || sum.MatchedSets != tc.sets {
				t.Errorf("rows %d (summary %d) cells %d sets %d; want %d, %d, %d", len(rows), sum.Rows, sum.Cells, sum.MatchedSets, tc.rows, tc.cells, tc.sets)
			}
			got := map[string]int64{}
			for _, d := range sum.Dropped {
				got[d.Reason] = d.Combinations
			}
			if !maps.Equal(got, tc.dropped) && (len(got) > 0 || len(tc.dropped) > 0) {
				t.Errorf("dropped %v, want %v", got, tc.dropped)
			}
		})
	}
}

func TestExpandDerivedDefaults(t *testing.T) {
	rows, _, _ := expandRows(t, "campaign: c\nfactors:\n  security: [tls]\n  brokers: [1, 2, 5]\n  platform: [local, aws, azure]\nfixed: {message_size: 100, acks: all, target_rate: 100}\n")
	for _, r := range rows {
		if r.ReplicationFactor != min(3, r.Brokers) || r.MinInsyncReplicas != min(2, r.ReplicationFactor) {
			t.Errorf("brokers %d: rf %d isr %d", r.Brokers, r.ReplicationFactor, r.MinInsyncReplicas)
		}
		if r.InstanceType != DefaultInstanceType(r.Platform) {
			t.Errorf("platform %s: instance_type %q", r.Platform, r.InstanceType)
		}
		if r.KafkaVersion != DefaultKafkaVersion || r.Partitions != 6 || r.BatchBytes != 131072 || !slices.Equal(r.EncryptFields, []string{"ssn"}) ||
			r.GatewayTransport != "tls" || r.WarmupS != 10 || r.DurationS != 30 || r.DrainTimeoutS != 30 || r.LingerMs != 1 {
			t.Errorf("defaults not filled: %+v", r)
		}
	}
}

// A target_rate max row without concurrency saturates through the producer
// buffer (ConcurrencyBuffer); a fixed-rate row's concurrency stays 1, so its
// cell is the one it always was; an explicit concurrency is kept.
func TestExpandConcurrencyDefault(t *testing.T) {
	rows, _, _ := expandRows(t, "campaign: c\nfactors:\n  security: [tls]\n  target_rate: [100, max]\nfixed: {brokers: 1, message_size: 100, acks: all}\n")
	got := map[string]int{}
	for _, r := range rows {
		got[r.TargetRate.String()] = r.Concurrency
	}
	if want := map[string]int{"100": 1, "max": ConcurrencyBuffer}; !maps.Equal(got, want) {
		t.Fatalf("concurrency by target_rate %v, want %v", got, want)
	}
	rows, _, _ = expandRows(t, "campaign: c\nfactors:\n  security: [tls]\nfixed: {brokers: 1, message_size: 100, acks: all, target_rate: max, concurrency: 10}\n")
	if rows[0].Concurrency != 10 {
		t.Fatalf("explicit concurrency 10 became %d", rows[0].Concurrency)
	}
	before := identities(t, "campaign: c\nfactors:\n  security: [tls, plaintext]\nfixed: {brokers: 1, message_size: 100, acks: all, target_rate: 100}\n")
	after := identities(t, "campaign: c\nfactors:\n  security: [tls, plaintext]\nfixed: {brokers: 1, message_size: 100, acks: all, target_rate: 100, concurrency: 1}\n")
	if !maps.Equal(before, after) {
		t.Fatalf("a fixed-rate row's cell depends on whether concurrency 1 is written: %v vs %v", before, after)
	}
	var b bytes.Buffer
	if _, err := Expand(mustSpec(t, "campaign: c\nfactors:\n  security: [tls]\nfixed: {brokers: 1, message_size: 100, acks: all, target_rate: 100, concurrency: 0}\n"), &b); !errors.Is(err, ErrNoRows) {
		t.Fatalf("concurrency 0 at a fixed rate: %v, want ErrNoRows (%s)", err, ReasonConcurrencyOpen)
	}
}

func TestExpandNoRows(t *testing.T) {
	var b bytes.Buffer
	sum, err := Expand(mustSpec(t, "campaign: c\nfactors:\n  security: [tls]\nfixed: {brokers: 1, replication_factor: 3, message_size: 100, acks: all, target_rate: 100}\n"), &b)
	if !errors.Is(err, ErrNoRows) {
		t.Fatalf("err %v, want ErrNoRows", err)
	}
	if b.Len() != 0 || len(sum.Dropped) != 1 || sum.Dropped[0].Reason != ReasonRFOverBrokers {
		t.Errorf("wrote %d bytes, dropped %v", b.Len(), sum.Dropped)
	}
}

// identities maps run -> (cell, pair) of an expansion.
func identities(t *testing.T, src string) map[string][2]string {
	rows, _, _ := expandRows(t, src)
	m := map[string][2]string{}
	for _, r := range rows {
		m[r.Run] = [2]string{r.Cell, r.Pair}
	}
	return m
}

// TestIdentityInvariance: identities do not depend on YAML key order, level
// order, the seed, or whether a value came from factors, fixed or a default.
func TestIdentityInvariance(t *testing.T) {
	ref := identities(t, `campaign: inv
replicates: 2
factors:
  security: [plaintext, tls, mtls]
  message_size: [1024, 10240]
  acks: ["1", all]
fixed:
  brokers: 3
  target_rate: 10000
exclude:
  - {security: mtls, message_size: 10240}
`)
	variants := map[string]string{
		"reordered keys and levels": `fixed:
  target_rate: 10000
  brokers: 3
exclude:
  - {message_size: 10240, security: mtls}
factors:
  acks: [all, 1]
  message_size: [10240, 1024]
  security: [mtls, plaintext, tls]
replicates: 2
baseline: plaintext
campaign: inv
`,
		"defaults written out": `campaign: inv
replicates: 2
factors:
  security: [plaintext, tls, mtls]
  message_size: [1024, 10240]
  acks: ["1", all]
  partitions: [6]
fixed:
  brokers: 3
  target_rate: 10000
  platform: local
  replication_factor: 3
  min_insync_replicas: 2
  encrypt_fields: [ssn]
  kafka_version: 3.9.1
  compression: none
exclude:
  - {security: mtls, message_size: 10240}
`,
		"other seed": `campaign: inv
seed: 99
replicates: 2
factors:
  security: [plaintext, tls, mtls]
  message_size: [1024, 10240]
  acks: ["1", all]
fixed: {brokers: 3, target_rate: 10000}
exclude:
  - {security: mtls, message_size: 10240}
`,
	}
	for name, src := range variants {
		t.Run(name, func(t *testing.T) {
			if got := identities(t, src); !maps.Equal(got, ref) {
				t.Errorf("identities differ:\n%v\n%v", got, ref)
			}
		})
	}
}

// TestCanonicalForm pins the documented canonical form (docs/spec.md, "The plan
// row and identities"): anyone recomputes a cell from it with sha256sum.
func TestCanonicalForm(t *testing.T) {
	rows, _, _ := expandRows(t, "campaign: c\nfactors:\n  security: [tls]\nfixed: {brokers: 3, message_size: 1024, acks: all, target_rate: 10000}\n")
	r := rows[0]
	want := `{"acks":"all","batch_bytes":131072,"brokers":3,"compression":"none","concurrency":1,"consumer_groups":1,"consumers_per_group":1,"drain_timeout_s":30,"duration_s":30,"encoding":"bytes","encrypt_fields":["ssn"],"gateway_crypto":"std","gateway_kind":"builtin","gateway_transport":"tls","gateways":1,"instance_type":"","kafka_version":"3.9.1","linger_ms":1,"message_size":1024,"min_insync_replicas":2,"partitions":6,"platform":"local","producers":1,"replication_factor":3,"security":"tls","target_rate":10000,"topics":1,"warmup_s":10}`
	if got := string(Canonical(&r)); got != want {
		t.Fatalf("canonical form\n%s\nwant\n%s", got, want)
	}
	// The canonical form is what encoding/json writes for a map of the
	// factor fields: sorted keys, no whitespace.
	var m map[string]any
	line, _ := json.Marshal(r)
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range identityNames {
		delete(m, k)
	}
	if m["field_cipher"] != DefaultFieldCipher {
		t.Errorf("field_cipher %v, want the default %s", m["field_cipher"], DefaultFieldCipher)
	}
	delete(m, "field_cipher") // left out of the cell at its default
	if m["client"] != DefaultClient {
		t.Errorf("client %v, want the default %s", m["client"], DefaultClient)
	}
	delete(m, "client") // likewise
	viaJSON, _ := json.Marshal(m)
	if string(viaJSON) != want {
		t.Errorf("json.Marshal of the factor fields\n%s\ndiffers from the canonical form", viaJSON)
	}
	if r.Cell != hash12([]byte(want)) || r.Cell != CellOf(&r) {
		t.Errorf("cell %s, recomputed %s", r.Cell, hash12([]byte(want)))
	}
	noTreatment := strings.Replace(want, `"security":"tls",`, "", 1)
	if r.Pair != hash12([]byte(noTreatment)) {
		t.Errorf("pair %s is not the hash without security", r.Pair)
	}
}

// TestOrder checks design rule 1 on a campaign with two infrastructure
// factors: infrastructure groups contiguous, blocks ascending inside a
// group, every matched set once per block and adjacent.
func TestOrder(t *testing.T) {
	rows, sum, _ := expandRows(t, `campaign: order
replicates: 3
factors:
  security: [plaintext, tls, mtls, sasl_ssl]
  brokers: [1, 3]
  gateways: [1, 2]
  message_size: [100, 1000, 10000]
  acks: ["1", all]
fixed: {target_rate: 100}
`)
	if sum.InfraGroups != 4 {
		t.Errorf("infra groups %d, want 4", sum.InfraGroups)
	}
	seenGroups := map[InfraKey]bool{}
	var prev *Row
	setsInBlock := map[string]int{}
	for i := range rows {
		r := &rows[i]
		if r.Order != i+1 {
			t.Fatalf("row %d has order %d", i, r.Order)
		}
		newGroup := prev == nil || prev.InfraKey() != r.InfraKey()
		if newGroup {
			if seenGroups[r.InfraKey()] {
				t.Fatalf("order %d: group %v comes back after another group", r.Order, r.InfraKey())
			}
			seenGroups[r.InfraKey()] = true
		}
		if !newGroup && r.Block < prev.Block {
			t.Fatalf("order %d: block %d after block %d in one group", r.Order, r.Block, prev.Block)
		}
		if newGroup || r.Block != prev.Block {
			for p, n := range setsInBlock {
				if n != 4 {
					t.Fatalf("matched set %s has %d rows in a block, want 4", p, n)
				}
			}
			if len(setsInBlock) != 0 && len(setsInBlock) != 6 {
				t.Fatalf("block has %d matched sets, want 6", len(setsInBlock))
			}
			clear(setsInBlock)
		}
		setsInBlock[r.Pair]++
		prev = r
	}
}

func TestSeedDeterminism(t *testing.T) {
	src := strings.Replace(exampleSpec, "seed: 20261201", "seed: 7", 1)
	_, _, a := expandRows(t, src)
	_, _, b := expandRows(t, src)
	if !bytes.Equal(a, b) {
		t.Fatal("same spec and seed gave different bytes")
	}
	var orders []string
	for seed := 1; seed <= 8; seed++ {
		rows, _, _ := expandRows(t, strings.Replace(exampleSpec, "seed: 20261201", fmt.Sprintf("seed: %d", seed), 1))
		var runs []string
		for _, r := range rows {
			runs = append(runs, r.Run)
		}
		orders = append(orders, strings.Join(runs, " "))
		sorted := slices.Clone(runs)
		slices.Sort(sorted)
		if seed > 1 {
			prevRuns := strings.Fields(orders[0])
			slices.Sort(prevRuns)
			if !slices.Equal(sorted, prevRuns) {
				t.Fatalf("seed %d changed the set of runs", seed)
			}
		}
	}
	slices.Sort(orders)
	if len(slices.Compact(orders)) < 6 {
		t.Errorf("8 seeds gave only %d distinct orders", len(slices.Compact(orders)))
	}
}

// TestShuffleUniform: the seeded shuffle reaches every permutation of 4
// with about equal frequency (chi-square, 23 degrees of freedom; 60 is far
// beyond the 0.9999 quantile, about 55).
func TestShuffleUniform(t *testing.T) {
	const n = 24000
	counts := map[[4]int]int{}
	for s := 0; s < n; s++ {
		p := [4]int{0, 1, 2, 3}
		newRNG(int64(s), 0, 1).shuffle(4, func(i, j int) { p[i], p[j] = p[j], p[i] })
		counts[p]++
	}
	if len(counts) != 24 {
		t.Fatalf("%d of 24 permutations reached", len(counts))
	}
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - n/24.0
		chi += d * d / (n / 24.0)
	}
	if chi > 60 {
		t.Errorf("chi-square %.1f: shuffle is not uniform", chi)
	}
}

func TestTreatmentOtherThanSecurity(t *testing.T) {
	rows, sum, _ := expandRows(t, `campaign: enc
replicates: 2
treatment: encoding
baseline: json
factors:
  encoding: [avro, json, protobuf]
  security: [sasl_ssl, field_encrypt]
fixed: {brokers: 1, message_size: 1024, acks: all, target_rate: 100}
`)
	if sum.MatchedSets != 4 || len(rows) != 12 {
		t.Fatalf("sets %d rows %d", sum.MatchedSets, len(rows))
	}
	for _, r := range rows {
		if r.Treatment != "encoding" || r.Baseline != "json" {
			t.Errorf("treatment %s baseline %s", r.Treatment, r.Baseline)
		}
		if r.Pair != hash12(Canonical(&r, "encoding")) {
			t.Errorf("pair does not omit encoding")
		}
		if r.IsBaseline() != (r.Encoding == "json") {
			t.Errorf("IsBaseline %v for %s", r.IsBaseline(), r.Encoding)
		}
	}
}

// TestRowJSON: encoding/json writes a Row as the JSONL encoder does,
// and decoding gives the row back.
func TestRowJSON(t *testing.T) {
	rows, _, _ := expandRows(t, `campaign: j
factors:
  security: [plaintext, field_encrypt]
  target_rate: [max, 250]
  encrypt_fields: [[ssn], [id, ssn, status]]
fixed: {brokers: 1, message_size: 1024, acks: "0", encoding: json, concurrency: 3, platform: azure}
exclude:
  - {target_rate: 250, concurrency: 3}
`)
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got := appendRowJSON(nil, &r)
		if !bytes.Equal(got, want) {
			t.Errorf("appendRowJSON\n%s\nencoding/json\n%s", got, want)
		}
		var back Row
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if !rowsEqual(back, r) {
			t.Errorf("round trip %+v != %+v", back, r)
		}
	}
}

func rowsEqual(a, b Row) bool {
	return reflect.DeepEqual(a, b)
}

func TestRowAccessors(t *testing.T) {
	rows, _, _ := expandRows(t, "campaign: a\nfactors:\n  security: [sasl_ssl, proxy]\nfixed: {brokers: 3, message_size: 1024, acks: all, target_rate: max, gateways: 2, platform: aws}\n")
	for _, r := range rows {
		if v, ok := r.Get("target_rate"); !ok || v != "max" {
			t.Errorf("Get(target_rate) = %q, %v", v, ok)
		}
		if v, _ := r.Get("encrypt_fields"); v != "ssn" {
			t.Errorf("Get(encrypt_fields) = %q", v)
		}
		if _, ok := r.Get("nope"); ok {
			t.Error("Get of an unknown field succeeded")
		}
		if r.NeedsGateway() != (r.Security == "proxy") || r.IsBaseline() != (r.Security == "sasl_ssl") {
			t.Errorf("%s: NeedsGateway %v IsBaseline %v", r.Security, r.NeedsGateway(), r.IsBaseline())
		}
		want := InfraKey{Platform: "aws", InstanceType: "m5.xlarge", Brokers: 3, KafkaVersion: "3.9.1", Gateways: 2, GatewayKind: "builtin"}
		if r.InfraKey() != want {
			t.Errorf("InfraKey %+v", r.InfraKey())
		}
		// ID is the recorded identity of a group; it names the rows'
		// kafka_version, not a Kafka that ran.
		if s := r.InfraKey().ID(); s != "aws/m5.xlarge brokers=3 kafka_version=3.9.1 gateways=2 builtin" {
			t.Errorf("InfraKey.ID %q", s)
		}
		if s := r.InfraKey().String(); s != r.InfraKey().ID() {
			t.Errorf("InfraKey.String %q, want ID", s)
		}
		// Group slugs are hashed from the key's earlier form: it must not
		// change, or groups already up would lose their names.
		if s := r.InfraKey().SlugSeed(); s != "aws/m5.xlarge brokers=3 kafka=3.9.1 gateways=2 builtin" {
			t.Errorf("InfraKey.SlugSeed %q", s)
		}
		if s := r.InfraKey().WithBroker("apache", "4.1.0"); s != "aws/m5.xlarge brokers=3 apache=4.1.0 gateways=2 builtin" {
			t.Errorf("InfraKey.WithBroker %q", s)
		}
		if s := r.InfraKey().WithBroker("", ""); s != "aws/m5.xlarge brokers=3 gateways=2 builtin" {
			t.Errorf("InfraKey.WithBroker without a broker %q", s)
		}
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestExpandStreams: rows reach the writer while expansion runs (a writer
// that fails stops it early with the writer's error).
func TestExpandStreams(t *testing.T) {
	s := mustSpec(t, spec1M)
	sum, err := Expand(s, &failingWriter{n: 1 << 20})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("err %v, want the writer's error", err)
	}
	if sum.Rows == 0 || sum.Rows > 10000 {
		t.Errorf("%d rows produced before the writer failed; want a few buffers' worth", sum.Rows)
	}
}

// TestClientField: client crosses like any factor; at its default,
// franz-go, it is left out of the cell, so a plan's cells are those of the
// same spec without the field; java and librdkafka make cells of their
// own, none shared.
func TestClientField(t *testing.T) {
	without, _, _ := expandRows(t, "campaign: c\nfactors:\n  security: [plaintext, tls]\n"+fixedBase)
	with, _, _ := expandRows(t, "campaign: c\nfactors:\n  security: [plaintext, tls]\n  client: [franz-go, java, librdkafka]\n"+fixedBase)
	if len(with) != 3*len(without) {
		t.Fatalf("%d rows with client crossed, want %d", len(with), 3*len(without))
	}
	cells := map[string]string{}
	for _, r := range without {
		if r.Client != ClientFranzGo {
			t.Errorf("row %s: client %q, want the default %s", r.Run, r.Client, ClientFranzGo)
		}
		cells[r.Cell] = r.Client
	}
	n := map[string]int{}
	for _, r := range with {
		n[r.Client]++
		owner, old := cells[r.Cell]
		switch {
		case r.Client == ClientFranzGo && !old:
			t.Errorf("franz-go row %s (%s) has a cell the plan without client lacks", r.Run, r.Security)
		case r.Client != ClientFranzGo && old:
			t.Errorf("%s row %s shares a cell with a %s row", r.Client, r.Run, owner)
		case r.Client != ClientFranzGo:
			cells[r.Cell] = r.Client
		}
	}
	for _, c := range []string{ClientJava, ClientLibrdkafka} {
		if n[c] != len(without) {
			t.Errorf("%d %s rows, want %d", n[c], c, len(without))
		}
	}
}

// TestRefusedClient: a client in ClientsRefused (none is today) is refused
// at plan time with its reason, at the line naming it.
func TestRefusedClient(t *testing.T) {
	ClientsRefused[ClientLibrdkafka] = "a reason"
	t.Cleanup(func() { delete(ClientsRefused, ClientLibrdkafka) })
	_, err := ParseSpec("x.yaml", []byte("campaign: c\nfactors:\n  security: [tls]\n  client: [java, librdkafka]\n"+fixedBase))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:4: factors: client: librdkafka is refused: a reason") {
		t.Fatalf("ParseSpec: %v; want client librdkafka refused at line 4 with its reason", err)
	}
}
