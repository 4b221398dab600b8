package results

import (
	"context"
	"strings"
	"time"
)

// WholeRunHistograms returns the whole-run histograms (second = WholeRun)
// of every attempt, of the given kinds (every kind when none are given),
// keyed by attempt id, then kind. One query, for analysis.
func (s *Store) WholeRunHistograms(ctx context.Context, kinds ...string) (map[int64]map[string][]byte, error) {
	q := `SELECT attempt, kind, data FROM histogram WHERE second = -1`
	args := make([]any, len(kinds))
	if len(kinds) > 0 {
		q += ` AND kind IN (?` + strings.Repeat(`, ?`, len(kinds)-1) + `)`
		for i, k := range kinds {
			args[i] = k
		}
	}
	rs, err := s.db.QueryContext(ctx, q+` ORDER BY attempt, kind`, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[int64]map[string][]byte{}
	for rs.Next() {
		var id int64
		var kind string
		var data []byte
		if err := rs.Scan(&id, &kind, &data); err != nil {
			return nil, err
		}
		if out[id] == nil {
			out[id] = map[string][]byte{}
		}
		out[id][kind] = data
	}
	return out, rs.Err()
}

// AllTelemetry returns the telemetry samples of every attempt, keyed by
// attempt id, each attempt's in time order. One query, for analysis.
func (s *Store) AllTelemetry(ctx context.Context) (map[int64][]Sample, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT attempt, host, ts, metric, value FROM telemetry ORDER BY attempt, ts, host, metric`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[int64][]Sample{}
	for rs.Next() {
		var id int64
		var m Sample
		var ts float64
		if err := rs.Scan(&id, &m.Host, &ts, &m.Metric, &m.Value); err != nil {
			return nil, err
		}
		m.TS = time.Unix(0, int64(ts*1e9))
		out[id] = append(out[id], m)
	}
	return out, rs.Err()
}
