package planner

import (
	"bytes"
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
	// topics, target_rate and warmup differ; they become factors, and the
	// 6 of their 8 combinations that no workload has are excluded.
	var factors []string
	for _, f := range s.Factors {
		factors = append(factors, f.Field)
	}
	if strings.Join(factors, ",") != "security,target_rate,topics,warmup_s" {
		t.Errorf("factors %v", factors)
	}
	if len(s.Exclude) != 6 {
		t.Errorf("%d exclude entries, want 6", len(s.Exclude))
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
