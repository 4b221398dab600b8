package planner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const ombSmall = `name: 1 topic / 16 partitions / 1kb
topics: 1
partitionsPerTopic: 16
keyDistributor: "NO_KEY"
messageSize: 1024
payloadFile: "payload/payload-1Kb.data"
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 50000
consumerBacklogSizeGB: 0
testDurationMinutes: 15
`

const ombMax = `name: max rate, 100 topics
topics: 100
partitionsPerTopic: 16
messageSize: 1024
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 0
testDurationMinutes: 15
warmupDurationMinutes: 5
`

func TestImportOMB(t *testing.T) {
	s, warnings, err := ImportOMB([]OMBFile{{"workloads/1-topic-16-partitions-1kb.yaml", []byte(ombSmall)}, {"b.yaml", []byte(ombMax)}}, ImportOptions{Security: []string{"plaintext", "tls"}, Replicates: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.Campaign != "omb-1-topic-16-partitions-1kb" {
		t.Errorf("campaign %q", s.Campaign)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "keyDistributor ignored") || !strings.Contains(warnings[1], "payloadFile ignored") {
		t.Errorf("warnings %q", warnings)
	}
	// topics, target_rate and warmup differ; they become factors, and an
	// include entry for each workload names its combination.
	var factors []string
	for _, f := range s.Factors {
		factors = append(factors, f.Field)
	}
	if strings.Join(factors, ",") != "security,target_rate,topics,warmup_s" {
		t.Errorf("factors %v", factors)
	}
	if len(s.Include) != 2 || len(s.Exclude) != 0 {
		t.Errorf("%d include and %d exclude entries, want 2 and 0", len(s.Include), len(s.Exclude))
	}
	var b bytes.Buffer
	sum, err := Expand(s, &b)
	if err != nil {
		t.Fatal(err)
	}
	// 2 workloads × 2 modes × 2 replicates.
	if sum.Rows != 8 {
		t.Fatalf("%d rows, want 8", sum.Rows)
	}
	rows, err := ValidatePlan(&b, "omb.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		small := r.Topics == 1
		wantRate, wantWarm := Rate(50000), 60
		if !small {
			wantRate, wantWarm = RateMax, 300
		}
		if r.TargetRate != wantRate || r.WarmupS != wantWarm || r.DurationS != 900 || r.Partitions != 16 ||
			r.Brokers != 3 || r.Acks != "all" || r.MessageSize != 1024 {
			t.Errorf("row %+v does not match its workload", r)
		}
	}
}

func TestImportOMBErrors(t *testing.T) {
	cases := []struct {
		name, workload string
		want           []string
	}{
		{"typo", strings.Replace(ombSmall, "partitionsPerTopic", "partitionPerTopic", 1),
			[]string{`w.yaml:3: unknown workload key "partitionPerTopic"; did you mean "partitionsPerTopic"?`, "w.yaml:1: missing partitionsPerTopic"}},
		{"wrong type", strings.Replace(ombSmall, "messageSize: 1024", "messageSize: 1kb", 1),
			[]string{`w.yaml:5: messageSize: want an integer, got "1kb"`}},
		{"backlog", strings.Replace(ombSmall, "consumerBacklogSizeGB: 0", "consumerBacklogSizeGB: 100", 1),
			[]string{"w.yaml:11: consumerBacklogSizeGB 100: backlog tests are not supported"}},
		{"negative rate", strings.Replace(ombSmall, "producerRate: 50000", "producerRate: -5", 1),
			[]string{"w.yaml:10: producerRate -5"}},
		{"not a mapping", "- 1\n", []string{"w.yaml:1: an OMB workload is a mapping"}},
		{"placeholder without default", strings.Replace(ombSmall, "messageSize: 1024", "messageSize: ${SIZE}", 1),
			[]string{"w.yaml:5: messageSize: ${SIZE} has no default (${SIZE:-VALUE}); write the value"}},
		{"placeholder default not a number", strings.Replace(ombSmall, "messageSize: 1024", "messageSize: ${SIZE:-1k}", 1),
			[]string{`w.yaml:5: messageSize: want an integer, got "1k"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ImportOMB([]OMBFile{{"w.yaml", []byte(tc.workload)}}, ImportOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
		})
	}
	if _, _, err := ImportOMB([]OMBFile{{"w.yaml", []byte(ombSmall)}}, ImportOptions{Security: []string{"plaintext", "tsl"}}); err == nil || !strings.Contains(err.Error(), `did you mean "tls"`) {
		t.Errorf("bad --security: %v", err)
	}
}

// TestImportOMBRealWorkloads: seven workloads from OMB's repository, varying
// in seven fields and using the rate-search keys and ${VAR:-default}
// placeholders, import as a spec of seven include entries (not the
// thousands of exclude entries a cross product minus the rest would take)
// and expand to exactly their configurations.
func TestImportOMBRealWorkloads(t *testing.T) {
	paths, err := filepath.Glob("testdata/omb/*.yaml")
	if err != nil || len(paths) != 7 {
		t.Fatalf("workloads %v %v", paths, err)
	}
	var files []OMBFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, OMBFile{p, b})
	}
	s, warnings, err := ImportOMB(files, ImportOptions{Security: []string{"plaintext", "tls"}, Replicates: 2})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(warnings, "\n")
	for _, w := range []string{
		"1-topic-1-partition-1kb-increment.yaml:30: producerStartRate ignored: OMB's rate search is not supported",
		"1-topic-1-partition-1kb-increment.yaml:32: producerIncrementRate ignored",
		"1-topic-1-partition-1kb-increment.yaml:33: producerIncrementSeconds ignored",
		"1-topic-1-partition-1kb-increment.yaml:35: testDurationMinutes: ${ombTestDuration:-15} resolved to its default 15",
		"generic-workload.yaml:22: topics: ${TOPICS:-10} resolved to its default 10",
		"generic-workload.yaml:34: producerRate: ${RATE:-1000000} resolved to its default 1000000",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
	var factors []string
	for _, f := range s.Factors {
		factors = append(factors, f.Field)
	}
	if len(factors) != 8 || len(s.Include) != 7 || len(s.Exclude) != 0 {
		t.Fatalf("factors %v, %d include, %d exclude entries", factors, len(s.Include), len(s.Exclude))
	}
	var spec bytes.Buffer
	if err := WriteSpec(&spec, s); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(spec.String(), "\n"); n > 40 {
		t.Errorf("spec of %d lines for 7 workloads:\n%s", n, spec.String())
	}
	var b bytes.Buffer
	if _, err := Expand(s, &b); err != nil {
		t.Fatal(err)
	}
	rows, err := ValidatePlan(&b, "omb.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	type conf struct {
		topics, partitions, size, producers, consumers, duration int
		rate                                                     Rate
	}
	got := map[conf]int{}
	for _, r := range rows {
		got[conf{r.Topics, r.Partitions, r.MessageSize, r.Producers, r.ConsumersPerGroup, r.DurationS, r.TargetRate}]++
	}
	want := []conf{
		{1, 1, 1024, 1, 1, 900, 50000},
		{1, 16, 1024, 1, 1, 900, 50000},
		{1, 1, 1024, 1, 1, 900, 1000},
		{1, 100, 1024, 4, 4, 300, 500000},
		{1, 100, 500, 16, 16, 300, 820},
		{10, 3, 1024, 1, 1, 900, 1000000},
		{1, 10, 1024, 10, 10, 300, 10000000},
	}
	for _, w := range want {
		if got[w] != 4 { // 2 modes × 2 replicates
			t.Errorf("configuration %+v: %d rows, want 4", w, got[w])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d configurations, want %d: %v", len(got), len(want), got)
	}
	if len(rows) != 28 {
		t.Errorf("%d rows, want 28", len(rows))
	}
}
