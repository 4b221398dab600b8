package perftest

import (
	"os"
	"testing"
)

// Summaries as Kafka 4.4.0's ProducerPerformance printed them here.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		file string
		want Result
	}{
		{"testdata/warmup.out", Result{Records: 40000, RecordsPerSec: 3550.505947, MBPerSec: 3.47, AvgLatencyMs: 4072.49, MaxLatencyMs: 7182,
			P50Ms: 4308, P95Ms: 7055, P99Ms: 7175, P999Ms: 7182, SteadyState: true}},
		{"testdata/plain.out", Result{Records: 300000, RecordsPerSec: 10280.309780, MBPerSec: 10.04, AvgLatencyMs: 2541.48, MaxLatencyMs: 5047,
			P50Ms: 2177, P95Ms: 4347, P99Ms: 4941, P999Ms: 5041}},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(b)
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.file, got, err, c.want)
		}
	}
	if _, err := Parse([]byte("Exception in thread \"main\" org.apache.kafka.common.KafkaException\n")); err == nil {
		t.Error("output without a summary parsed")
	}
}
