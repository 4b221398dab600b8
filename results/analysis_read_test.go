package results

import (
	"context"
	"encoding/json"
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

// TestEachTelemetryAndNamedLogs: samples come one attempt at a time, in
// the order written, and only for attempts that have them; a named log of every
// attempt that has one, decompressed.
func TestEachTelemetryAndNamedLogs(t *testing.T) {
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
	got := map[int64][]Sample{}
	var order []int64
	if err := s.EachTelemetry(ctx, func(id int64, samples []Sample) error {
		order = append(order, id)
		got[id] = append([]Sample(nil), samples...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[int64][]Sample{
		ids[0]: {{Host: "client", TS: at(1.5), Metric: "cpu_s", Value: 2}, {Host: "cluster", TS: at(0.25), Metric: "cpu_s", Value: 1}},
		ids[2]: {{Host: "client", TS: at(3), Metric: "rss_mib", Value: 7}},
	}
	if !reflect.DeepEqual(order, []int64{ids[0], ids[2]}) {
		t.Errorf("attempts in order %v, want %v", order, []int64{ids[0], ids[2]})
	}
	for id, w := range want {
		g := got[id]
		if len(g) != len(w) {
			t.Fatalf("attempt %d: %+v, want %+v", id, g, w)
		}
		for i := range w {
			// Times are stored as Unix seconds in a REAL: to the microsecond.
			if g[i].Host != w[i].Host || g[i].TS.Sub(w[i].TS).Abs() > time.Microsecond || g[i].Metric != w[i].Metric || g[i].Value != w[i].Value {
				t.Errorf("attempt %d sample %d: %+v, want %+v", id, i, g[i], w[i])
			}
		}
	}
	logs, err := s.NamedLogs(ctx, "loadgen.json")
	if err != nil {
		t.Fatal(err)
	}
	if wantLogs := map[int64][]byte{ids[0]: []byte(`{"start":"a"}`), ids[2]: []byte(`{"start":"c"}`)}; !reflect.DeepEqual(logs, wantLogs) {
		t.Errorf("NamedLogs: %v, want %v", logs, wantLogs)
	}
}
