package results

import (
	"context"
	"fmt"
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

// EachTelemetry calls fn with the telemetry samples of every attempt that
// has any, one attempt at a time in attempt order, each attempt's in the
// order they were written (the runner writes them in time order; sorting
// here would cost a third of the walk). One query, for analysis: only one
// attempt's samples are held at a time. fn must not use the store; its
// error stops the walk and is returned.
func (s *Store) EachTelemetry(ctx context.Context, fn func(attempt int64, samples []Sample) error) error {
	rs, err := s.db.QueryContext(ctx, `SELECT attempt, host, ts, metric, value FROM telemetry ORDER BY attempt`)
	if err != nil {
		return err
	}
	defer rs.Close()
	var cur int64
	var batch []Sample
	for rs.Next() {
		var id int64
		var m Sample
		var ts float64
		if err := rs.Scan(&id, &m.Host, &ts, &m.Metric, &m.Value); err != nil {
			return err
		}
		m.TS = time.Unix(0, int64(ts*1e9))
		if id != cur && len(batch) > 0 {
			if err := fn(cur, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		cur = id
		batch = append(batch, m)
	}
	if err := rs.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		return fn(cur, batch)
	}
	return nil
}

// NamedLogs returns the decompressed log called name of every attempt
// that has one, keyed by attempt id. One query, for analysis.
func (s *Store) NamedLogs(ctx context.Context, name string) (map[int64][]byte, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT attempt, encoding, data FROM log WHERE name = ? ORDER BY attempt`, name)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[int64][]byte{}
	for rs.Next() {
		var id int64
		var enc string
		var data []byte
		if err := rs.Scan(&id, &enc, &data); err != nil {
			return nil, err
		}
		text, err := decompress(enc, data)
		if err != nil {
			return nil, fmt.Errorf("attempt %d log %s: %w", id, name, err)
		}
		out[id] = text
	}
	return out, rs.Err()
}
