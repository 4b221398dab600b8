package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
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

// telemetrySlack is how far (seconds) a sample may lie from a window's
// end and still be returned: more than a stored timestamp's rounding
// (float seconds), so the caller, comparing times itself, sees every
// sample it could place on either side of the end.
const telemetrySlack = 1e-5

// Window is a measured window of an attempt.
type Window struct {
	Attempt    int64
	Start, End time.Time
}

// TelemetryAround calls fn, for each window in turn, with the samples of
// its attempt, of the given metrics, that decide what each host and metric did over [Start, End],
// in the order they were written: near each end of the window (within
// telemetrySlack), the last sample before and the first after that zone,
// and for the metrics named in peak the sample of largest value inside
// the window (all samples sharing each of those timestamps). Interpolating
// a counter at the window's ends, clipping the window to the samples'
// span, and the largest value of a peak metric in the window come out the
// same from these as from all the attempt's samples. One prepared query;
// each sample it finds is an index seek (telemetry_series), not a walk of
// every sample. On a read-only store the attempts are read by up to
// GOMAXPROCS (at most 4) workers, each on its own connection, so fn sees
// them in no set order, one at a time. fn is not called for an attempt
// without samples; it must not use the store; its error stops its
// worker's walk and is returned.
func (s *Store) TelemetryAround(ctx context.Context, windows []Window, metrics, peak []string, fn func(attempt int64, samples []Sample) error) error {
	pj, err := json.Marshal(peak)
	if err != nil {
		return err
	}
	mj, err := json.Marshal(metrics)
	if err != nil {
		return err
	}
	// The attempts are independent: on a read-only store each worker reads
	// its share on its own connection; fn is called one attempt at a time.
	workers := 1
	if s.readOnly {
		workers = min(runtime.GOMAXPROCS(0), 4, max(len(windows), 1))
	}
	var mu sync.Mutex
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := k*len(windows)/workers, (k+1)*len(windows)/workers
			errs[k] = s.telemetryAround(ctx, windows[lo:hi], string(mj), string(pj), func(id int64, samples []Sample) error {
				mu.Lock()
				defer mu.Unlock()
				return fn(id, samples)
			})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *Store) telemetryAround(ctx context.Context, windows []Window, mj, pj string, fn func(attempt int64, samples []Sample) error) error {
	st, err := s.db.PrepareContext(ctx, telemetryAroundQuery)
	if err != nil {
		return err
	}
	defer st.Close()
	var out []Sample
	for _, w := range windows {
		out = out[:0]
		a := float64(w.Start.UnixNano()) / 1e9
		b := float64(w.End.UnixNano()) / 1e9
		rs, err := st.QueryContext(ctx, w.Attempt, a, b, telemetrySlack, pj, mj)
		if err != nil {
			return err
		}
		for rs.Next() {
			var m Sample
			var id int64
			var ts float64
			if err := rs.Scan(&id, &m.Host, &ts, &m.Metric, &m.Value); err != nil {
				rs.Close()
				return err
			}
			m.TS = time.Unix(0, int64(ts*1e9))
			out = append(out, m)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return err
		}
		if len(out) > 0 {
			if err := fn(w.Attempt, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// telemetryAroundQuery finds, per host and metric (k), the last sample
// time before and the first after each end's zone (t1, t2 and t3, t4) and
// the peak's (tp). No sample lies between t1 and the zone nor between the
// zone and t2, so an end's samples are the one index range [t1, t2]
// (the zone's own bound where t1 or t2 is missing): a seek and a short
// walk, where a seek per time and another per zone cost half as much again.
const telemetryAroundQuery = `
WITH RECURSIVE h(host) AS (
	SELECT min(host) FROM telemetry WHERE attempt = ?1
	UNION ALL
	SELECT (SELECT min(host) FROM telemetry WHERE attempt = ?1 AND host > h.host) FROM h WHERE h.host IS NOT NULL),
hm(host, metric) AS (SELECT h.host, m.value FROM h CROSS JOIN json_each(?6) m WHERE h.host IS NOT NULL),
k(host, metric, t1, t2, t3, t4, tp) AS MATERIALIZED (
	SELECT host, metric,
		(SELECT max(ts) FROM telemetry WHERE attempt = ?1 AND host = hm.host AND metric = hm.metric AND ts < ?2 - ?4),
		(SELECT min(ts) FROM telemetry WHERE attempt = ?1 AND host = hm.host AND metric = hm.metric AND ts > ?2 + ?4),
		(SELECT max(ts) FROM telemetry WHERE attempt = ?1 AND host = hm.host AND metric = hm.metric AND ts < ?3 - ?4),
		(SELECT min(ts) FROM telemetry WHERE attempt = ?1 AND host = hm.host AND metric = hm.metric AND ts > ?3 + ?4),
		CASE WHEN hm.metric IN (SELECT value FROM json_each(?5)) THEN
		(SELECT ts FROM telemetry WHERE attempt = ?1 AND host = hm.host AND metric = hm.metric
			AND ts BETWEEN ?2 + ?4 AND ?3 - ?4 ORDER BY value DESC LIMIT 1) END
	FROM hm)
SELECT t.rowid, t.host, t.ts, t.metric, t.value FROM k CROSS JOIN telemetry t ON t.attempt = ?1 AND t.host = k.host AND t.metric = k.metric
	AND t.ts BETWEEN coalesce(k.t1, ?2 - ?4) AND coalesce(k.t2, ?2 + ?4)
UNION
SELECT t.rowid, t.host, t.ts, t.metric, t.value FROM k CROSS JOIN telemetry t ON t.attempt = ?1 AND t.host = k.host AND t.metric = k.metric
	AND t.ts BETWEEN coalesce(k.t3, ?3 - ?4) AND coalesce(k.t4, ?3 + ?4)
UNION
SELECT t.rowid, t.host, t.ts, t.metric, t.value FROM k CROSS JOIN telemetry t ON t.attempt = ?1 AND t.host = k.host AND t.metric = k.metric
	AND t.ts = k.tp
ORDER BY 1`

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
