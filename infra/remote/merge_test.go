package remote

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/runner/loadgen"
)

func encode(t *testing.T, h *hdrhistogram.Histogram) string {
	t.Helper()
	b, err := loadgen.EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMergeEqualsOneClient: the records of one run, measured once by a
// single client and once split over two, give the same histograms bucket
// for bucket and the same percentiles.
func TestMergeEqualsOneClient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	one := [3]*hdrhistogram.Histogram{loadgen.NewHistogram(), loadgen.NewHistogram(), loadgen.NewHistogram()}
	split := [2][3]*hdrhistogram.Histogram{}
	for c := range split {
		for k := range split[c] {
			split[c][k] = loadgen.NewHistogram()
		}
	}
	for i := 0; i < 200_000; i++ {
		// Latencies from 50 µs to a few seconds, heavy tailed.
		vals := [3]int64{int64(50 + rng.ExpFloat64()*2000), int64(80 + rng.ExpFloat64()*5000 + float64(rng.IntN(1000)*rng.IntN(2000))), int64(rng.ExpFloat64() * 30)}
		c := rng.IntN(2)
		for k, v := range vals {
			v = max(v, 1)
			one[k].RecordValue(v)
			split[c][k].RecordValue(v)
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	part := func(host string, hs [3]*hdrhistogram.Histogram, rate loadgen.Rate, start time.Duration) Part {
		return Part{Host: host, Result: loadgen.Result{Healthy: true, TargetRate: rate,
			Published: hs[0].TotalCount(), Consumed: hs[1].TotalCount(),
			Histograms: loadgen.Histograms{Publish: encode(t, hs[0]), E2E: encode(t, hs[1]), SendDelay: encode(t, hs[2])},
			Series:     []loadgen.Second{{Second: 0, Published: 10, Backlog: 3}, {Second: 1, Published: 20, Backlog: 1}},
			Start:      t0.Add(start), End: t0.Add(start + 10*time.Second)}}
	}
	got, err := Merge([]Part{part("client-0", split[0], 600, 0), part("client-1", split[1], 400, time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	for k, enc := range []string{got.Histograms.Publish, got.Histograms.E2E, got.Histograms.SendDelay} {
		h, err := hdrhistogram.Decode([]byte(enc))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(h.Distribution(), one[k].Distribution()) {
			t.Errorf("histogram %d: merged buckets differ from the single client's", k)
		}
		if h.TotalCount() != one[k].TotalCount() {
			t.Errorf("histogram %d: %d values, want %d", k, h.TotalCount(), one[k].TotalCount())
		}
	}
	if got.PublishLatencyMs != loadgen.Summarize(one[0]) || got.E2ELatencyMs != loadgen.Summarize(one[1]) {
		t.Errorf("percentiles %+v / %+v differ from the single client's", got.PublishLatencyMs, got.E2ELatencyMs)
	}
	if got.TargetRate != 1000 || got.Config.Rate != 1000 || got.Published != one[0].TotalCount() {
		t.Errorf("rate %v published %d", got.TargetRate, got.Published)
	}
	if want := []loadgen.Second{{Second: 0, Published: 20, Backlog: 6}, {Second: 1, Published: 40, Backlog: 2}}; !reflect.DeepEqual(got.Series, want) || got.BacklogMax != 6 {
		t.Errorf("series %+v backlog max %d", got.Series, got.BacklogMax)
	}
	if !got.Start.Equal(t0) || !got.End.Equal(t0.Add(11*time.Second)) {
		t.Errorf("window %v .. %v", got.Start, got.End)
	}
}

func TestMergeUnhealthyPart(t *testing.T) {
	ok := Part{Host: "client-0", Result: loadgen.Result{Healthy: true, TargetRate: 100}}
	bad := Part{Host: "client-1", Result: loadgen.Result{Healthy: false, TargetRate: 100, Reasons: []string{"publish rate 80 msg/s below target"}}}
	got, err := Merge([]Part{ok, bad})
	if err != nil {
		t.Fatal(err)
	}
	if got.Healthy || len(got.Reasons) != 1 || !strings.HasPrefix(got.Reasons[0], "client-1: ") {
		t.Fatalf("healthy %v reasons %q", got.Healthy, got.Reasons)
	}
	if _, err := Merge(nil); err == nil {
		t.Fatal("merging nothing succeeded")
	}
	garbled := Part{Host: "client-2", Result: loadgen.Result{Histograms: loadgen.Histograms{Publish: "not a histogram"}}}
	if _, err := Merge([]Part{ok, garbled}); err == nil || !strings.Contains(err.Error(), "client-2") {
		t.Fatalf("a garbled histogram: %v", err)
	}
}

// TestMergeConnections: two clients' churn adds up (reconnects,
// handshakes, their rate) and their reconnect times merge into the one
// histogram of both; clients that negotiated differently are an error
// naming the host; a run without connections has none.
func TestMergeConnections(t *testing.T) {
	hist := func(ms ...int64) (*hdrhistogram.Histogram, string) {
		h := loadgen.NewHistogram()
		for _, v := range ms {
			h.RecordValue(v * 1000)
		}
		return h, encode(t, h)
	}
	_, h0 := hist(3, 4, 5)
	_, h1 := hist(7, 90)
	both, _ := hist(3, 4, 5, 7, 90)
	conn := func(mech string, reconnects int64, h string) *loadgen.Connections {
		return &loadgen.Connections{TLSVersion: "TLS 1.2", TLSCipher: "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", TLSKey: "ecdsa-p256",
			SASLMechanism: mech, Churn: 50, Reconnects: reconnects, Handshakes: reconnects + 2, HandshakesPerS: float64(reconnects+2) / 2, Reconnect: h}
	}
	part := func(host string, c *loadgen.Connections) Part {
		return Part{Host: host, Result: loadgen.Result{Healthy: true, Connections: c}}
	}
	got, err := Merge([]Part{part("client-0", conn("SCRAM-SHA-256", 3, h0)), part("client-1", conn("SCRAM-SHA-256", 2, h1))})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Connections
	if c == nil || c.Reconnects != 5 || c.Handshakes != 9 || c.HandshakesPerS != 4.5 || c.Churn != 50 || c.SASLMechanism != "SCRAM-SHA-256" || c.TLSVersion != "TLS 1.2" {
		t.Fatalf("merged connections %+v", c)
	}
	if c.ReconnectMs != loadgen.Summarize(both) || c.Reconnect != encode(t, both) {
		t.Errorf("reconnect times %+v, want those of both clients %+v", c.ReconnectMs, loadgen.Summarize(both))
	}
	if _, err := Merge([]Part{part("client-0", conn("SCRAM-SHA-256", 3, h0)), part("client-1", conn("PLAIN", 2, h1))}); err == nil || !strings.Contains(err.Error(), "client-1 negotiated") {
		t.Errorf("clients that negotiated different mechanisms: %v", err)
	}
	if got, err := Merge([]Part{part("client-0", nil), part("client-1", nil)}); err != nil || got.Connections != nil {
		t.Errorf("a run without connections: %+v, %v", got.Connections, err)
	}
}

// TestMergeScheduling: the client hosts' pacers add up, the merged steal
// is the worst host's, and a run whose parts measured nothing has none.
func TestMergeScheduling(t *testing.T) {
	part := func(host string, s *loadgen.Scheduling) Part {
		return Part{Host: host, Result: loadgen.Result{Healthy: true, Scheduling: s}}
	}
	got, err := Merge([]Part{
		part("client-0", &loadgen.Scheduling{PacerWaitMs: 1.5, PacerRuns: 100, Pacers: 2, StealPct: 0.5}),
		part("client-1", nil),
		part("client-2", &loadgen.Scheduling{PacerWaitMs: 2, PacerRuns: 50, Pacers: 1, StealPct: 3}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := (loadgen.Scheduling{PacerWaitMs: 3.5, PacerRuns: 150, Pacers: 3, StealPct: 3}); got.Scheduling == nil || *got.Scheduling != want {
		t.Errorf("merged scheduling %+v, want %+v", got.Scheduling, want)
	}
	if got, err := Merge([]Part{part("client-0", nil), part("client-1", nil)}); err != nil || got.Scheduling != nil {
		t.Errorf("merging parts without scheduling: %+v, %v; want none", got.Scheduling, err)
	}
}
