package results

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestWholeRunHistograms(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := []Row{
		{Run: "a-r1", Order: 1, Cell: "a", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{"security":"plaintext"}`)},
		{Run: "b-r1", Order: 2, Cell: "b", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{"security":"tls"}`)},
	}
	if _, err := s.Register(ctx, Campaign{Name: "h", Plan: []byte("plan"), Target: "local"}, rows); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i, r := range rows {
		ev := Evidence{Outcome: OutcomeDone, Histograms: []Histogram{
			{Kind: KindPublish, Second: WholeRun, Data: []byte{byte(i), 1}},
			{Kind: KindPublish, Second: 0, Data: []byte{byte(i), 2}},
			{Kind: KindE2E, Second: WholeRun, Data: []byte{byte(i), 3}},
			{Kind: KindSendDelay, Second: WholeRun, Data: []byte{byte(i), 4}},
		}}
		a, err := s.RecordAttempt(ctx, r.Run, time.Unix(0, 0), nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	cases := []struct {
		name  string
		kinds []string
		want  map[int64]map[string][]byte
	}{
		{"publish-and-e2e", []string{KindPublish, KindE2E}, map[int64]map[string][]byte{
			ids[0]: {KindPublish: {0, 1}, KindE2E: {0, 3}},
			ids[1]: {KindPublish: {1, 1}, KindE2E: {1, 3}},
		}},
		{"every-kind", nil, map[int64]map[string][]byte{
			ids[0]: {KindPublish: {0, 1}, KindE2E: {0, 3}, KindSendDelay: {0, 4}},
			ids[1]: {KindPublish: {1, 1}, KindE2E: {1, 3}, KindSendDelay: {1, 4}},
		}},
		{"absent-kind", []string{"nope"}, map[int64]map[string][]byte{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.WholeRunHistograms(ctx, c.kinds...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestNamedLogs: the named log of every attempt that has one,
// decompressed; attempts without it (or with only other logs) are absent.
func TestNamedLogs(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := []Row{
		{Run: "a-r1", Order: 1, Cell: "a", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{"security":"plaintext"}`)},
		{Run: "b-r1", Order: 2, Cell: "b", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{"security":"tls"}`)},
		{Run: "c-r1", Order: 3, Cell: "c", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{"security":"mtls"}`)},
	}
	if _, err := s.Register(ctx, Campaign{Name: "t", Plan: []byte("plan"), Target: "local"}, rows); err != nil {
		t.Fatal(err)
	}
	at := func(sec float64) time.Time { return time.Unix(1_700_000_000, int64(sec*1e9)) }
	evs := []Evidence{
		{Outcome: OutcomeDone, Telemetry: []Sample{
			{Host: "client", TS: at(1.5), Metric: "cpu_s", Value: 2},
			{Host: "cluster", TS: at(0.25), Metric: "cpu_s", Value: 1},
		}, Logs: []Log{{Name: "loadgen.json", Text: []byte(`{"start":"a"}`)}, {Name: "runner", Text: []byte("r")}}},
		{Outcome: OutcomeDone, Logs: []Log{{Name: "runner", Text: []byte("r")}}},
		{Outcome: OutcomeDone, Telemetry: []Sample{{Host: "client", TS: at(3), Metric: "rss_mib", Value: 7}},
			Logs: []Log{{Name: "loadgen.json", Text: []byte(`{"start":"c"}`)}}},
	}
	var ids []int64
	for i, r := range rows {
		a, err := s.RecordAttempt(ctx, r.Run, time.Unix(0, 0), nil, evs[i])
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	logs, err := s.NamedLogs(ctx, "loadgen.json")
	if err != nil {
		t.Fatal(err)
	}
	if wantLogs := map[int64][]byte{ids[0]: []byte(`{"start":"a"}`), ids[2]: []byte(`{"start":"c"}`)}; !reflect.DeepEqual(logs, wantLogs) {
		t.Errorf("NamedLogs: %v, want %v", logs, wantLogs)
	}
}

// TestTelemetryAround: per host and asked metric, the samples bounding
// each end of the window (ties kept, a sample on an end kept), the largest
// of a peak metric inside it, in the order written; none of an unasked
// metric; no call for an attempt without samples.
func TestTelemetryAround(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := []Row{
		{Run: "a-r1", Order: 1, Cell: "a", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{"security":"plaintext"}`)},
		{Run: "b-r1", Order: 2, Cell: "b", Pair: "p", Replicate: 1, Block: 1, Plan: json.RawMessage(`{"security":"tls"}`)},
	}
	if _, err := s.Register(ctx, Campaign{Name: "t", Plan: []byte("plan"), Target: "local"}, rows); err != nil {
		t.Fatal(err)
	}
	at := func(sec float64) time.Time { return time.Unix(1_700_000_000, int64(sec*1e9)) }
	var tel []Sample
	for sec := 0; sec <= 10; sec++ {
		tel = append(tel, Sample{Host: "h", TS: at(float64(sec)), Metric: "cpu_s", Value: float64(sec)},
			Sample{Host: "h", TS: at(float64(sec)), Metric: "rss_mib", Value: float64(100 - (sec-5)*(sec-5))},
			Sample{Host: "h", TS: at(float64(sec)), Metric: "other", Value: 1})
	}
	tel = append(tel, Sample{Host: "h", TS: at(2), Metric: "cpu_s", Value: 2.5}, // a tie at 2 s, written later
		Sample{Host: "h", TS: at(7.5), Metric: "cpu_s", Value: 7.5}, // on the window's end
		Sample{Host: "early", TS: at(0), Metric: "cpu_s", Value: 0}, Sample{Host: "early", TS: at(1), Metric: "cpu_s", Value: 1})
	var ids []int64
	for i, ev := range []Evidence{{Outcome: OutcomeDone, Telemetry: tel}, {Outcome: OutcomeDone}} {
		a, err := s.RecordAttempt(ctx, rows[i].Run, time.Unix(0, 0), nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	type got struct {
		host, metric string
		sec, value   float64
	}
	var gs []got
	calls := 0
	err = s.TelemetryAround(ctx, []Window{{ids[0], at(2.5), at(7.5)}, {ids[1], at(2.5), at(7.5)}},
		[]string{"cpu_s", "rss_mib"}, []string{"rss_mib"}, func(id int64, samples []Sample) error {
			calls++
			if id != ids[0] {
				t.Errorf("called for attempt %d without samples", id)
			}
			for _, m := range samples {
				gs = append(gs, got{m.Host, m.Metric, math.Round(m.TS.Sub(at(0)).Seconds()*1e3) / 1e3, m.Value})
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	want := []got{
		{"h", "cpu_s", 2, 2}, {"h", "rss_mib", 2, 91},
		{"h", "cpu_s", 3, 3}, {"h", "rss_mib", 3, 96},
		{"h", "rss_mib", 5, 100},
		{"h", "cpu_s", 7, 7}, {"h", "rss_mib", 7, 96},
		{"h", "cpu_s", 8, 8}, {"h", "rss_mib", 8, 91},
		{"h", "cpu_s", 2, 2.5}, {"h", "cpu_s", 7.5, 7.5},
		{"early", "cpu_s", 1, 1},
	}
	if calls != 1 || !reflect.DeepEqual(gs, want) {
		t.Errorf("%d calls, samples\n%v\nwant\n%v", calls, gs, want)
	}
}
