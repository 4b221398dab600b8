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
