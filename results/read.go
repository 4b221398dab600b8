package results

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Campaign returns the registered campaign, or ErrNoCampaign.
func (s *Store) Campaign(ctx context.Context) (Campaign, error) {
	var c Campaign
	var host, created string
	err := s.db.QueryRowContext(ctx, `SELECT name, spec, plan, plan_sha256, target, seed, xp_version, host, created
		FROM campaign WHERE id = 1`).Scan(&c.Name, &c.Spec, &c.Plan, &c.PlanSHA256, &c.Target, &c.Seed,
		&c.XPVersion, &host, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Campaign{}, fmt.Errorf("%s: %w", s.path, ErrNoCampaign)
	}
	if err != nil {
		return Campaign{}, err
	}
	c.Host = json.RawMessage(host)
	c.Created, err = parseTime(created)
	return c, err
}

// Rows returns every row in plan order.
func (s *Store) Rows(ctx context.Context) ([]Row, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT run, plan_order, cell, pair, replicate, block, plan_row, state
		FROM row ORDER BY plan_order`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Row
	for rs.Next() {
		var r Row
		var plan, state string
		if err := rs.Scan(&r.Run, &r.Order, &r.Cell, &r.Pair, &r.Replicate, &r.Block, &plan, &state); err != nil {
			return nil, err
		}
		r.Plan, r.State = json.RawMessage(plan), State(state)
		out = append(out, r)
	}
	return out, rs.Err()
}

// AttemptCounts returns, per run, how many attempts ended with each outcome.
func (s *Store) AttemptCounts(ctx context.Context) (map[string]map[Outcome]int, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT run, outcome, count(*) FROM attempt
		WHERE outcome IS NOT NULL GROUP BY run, outcome`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]map[Outcome]int{}
	for rs.Next() {
		var run, o string
		var n int
		if err := rs.Scan(&run, &o, &n); err != nil {
			return nil, err
		}
		if out[run] == nil {
			out[run] = map[Outcome]int{}
		}
		out[run][Outcome(o)] = n
	}
	return out, rs.Err()
}

// Attempts returns every attempt (with its metrics) in order of id.
func (s *Store) Attempts(ctx context.Context) ([]Attempt, error) {
	return s.attempts(ctx, "", nil)
}

// RunAttempts returns the attempts of one run, oldest first, with metrics.
func (s *Store) RunAttempts(ctx context.Context, run string) ([]Attempt, error) {
	return s.attempts(ctx, "WHERE run = ?", []any{run})
}

func (s *Store) attempts(ctx context.Context, where string, args []any) ([]Attempt, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT id, run, number, started, coalesce(ended, ''), phase,
		coalesce(outcome, ''), reasons, error, environment, superseded FROM attempt `+where+` ORDER BY id`, args...)
	if err != nil {
		return nil, err
	}
	var out []Attempt
	idx := map[int64]int{}
	for rs.Next() {
		var a Attempt
		var started, ended, outcome, reasons, env string
		if err := rs.Scan(&a.ID, &a.Run, &a.Number, &started, &ended, &a.Phase, &outcome, &reasons, &a.Error, &env, &a.Superseded); err != nil {
			rs.Close()
			return nil, err
		}
		if a.Started, err = parseTime(started); err != nil {
			rs.Close()
			return nil, fmt.Errorf("attempt %d: %w", a.ID, err)
		}
		if a.Ended, err = parseTime(ended); err != nil {
			rs.Close()
			return nil, fmt.Errorf("attempt %d: %w", a.ID, err)
		}
		a.Outcome = Outcome(outcome)
		if err := json.Unmarshal([]byte(reasons), &a.Reasons); err != nil {
			rs.Close()
			return nil, fmt.Errorf("attempt %d: reasons: %w", a.ID, err)
		}
		a.Environment = json.RawMessage(env)
		a.Metrics = map[string]float64{}
		idx[a.ID] = len(out)
		out = append(out, a)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, err
	}
	q := `SELECT attempt, name, value FROM metric`
	if where != "" {
		q += ` WHERE attempt IN (SELECT id FROM attempt ` + where + `)`
	}
	ms, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer ms.Close()
	for ms.Next() {
		var id int64
		var name string
		var v float64
		if err := ms.Scan(&id, &name, &v); err != nil {
			return nil, err
		}
		if i, ok := idx[id]; ok {
			out[i].Metrics[name] = v
		}
	}
	return out, ms.Err()
}

// Histograms returns the encoded histograms of an attempt of one kind ("" =
// every kind), ordered by kind then second (the whole-run one, -1, first).
func (s *Store) Histograms(ctx context.Context, attempt int64, kind string) ([]Histogram, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT kind, second, data FROM histogram
		WHERE attempt = ? AND (? = '' OR kind = ?) ORDER BY kind, second`, attempt, kind, kind)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Histogram
	for rs.Next() {
		var h Histogram
		if err := rs.Scan(&h.Kind, &h.Second, &h.Data); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rs.Err()
}

// WholeRunHistogram returns the whole-run histogram of one kind, or nil if
// the attempt has none.
func (s *Store) WholeRunHistogram(ctx context.Context, attempt int64, kind string) ([]byte, error) {
	var b []byte
	err := s.db.QueryRowContext(ctx, `SELECT data FROM histogram WHERE attempt = ? AND kind = ? AND second = -1`,
		attempt, kind).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return b, err
}

// Series returns the per-second series of an attempt.
func (s *Store) Series(ctx context.Context, attempt int64) ([]SeriesPoint, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT second, published, consumed, backlog FROM series
		WHERE attempt = ? ORDER BY second`, attempt)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []SeriesPoint
	for rs.Next() {
		var p SeriesPoint
		if err := rs.Scan(&p.Second, &p.Published, &p.Consumed, &p.Backlog); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rs.Err()
}

// Telemetry returns the telemetry samples of an attempt in time order.
func (s *Store) Telemetry(ctx context.Context, attempt int64) ([]Sample, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT host, ts, metric, value FROM telemetry
		WHERE attempt = ? ORDER BY ts, host, metric`, attempt)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Sample
	for rs.Next() {
		var m Sample
		var ts float64
		if err := rs.Scan(&m.Host, &ts, &m.Metric, &m.Value); err != nil {
			return nil, err
		}
		m.TS = time.Unix(0, int64(ts*1e9))
		out = append(out, m)
	}
	return out, rs.Err()
}

// Logs returns the decompressed logs of an attempt, by name.
func (s *Store) Logs(ctx context.Context, attempt int64) ([]Log, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT name, encoding, data FROM log WHERE attempt = ? ORDER BY name`, attempt)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Log
	for rs.Next() {
		var name, enc string
		var data []byte
		if err := rs.Scan(&name, &enc, &data); err != nil {
			return nil, err
		}
		text, err := decompress(enc, data)
		if err != nil {
			return nil, fmt.Errorf("attempt %d log %s: %w", attempt, name, err)
		}
		out = append(out, Log{Name: name, Text: text})
	}
	return out, rs.Err()
}

func decompress(enc string, data []byte) ([]byte, error) {
	switch enc {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case "zstd":
		d, err := zstd.NewReader(nil)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(data, nil)
	}
	return nil, fmt.Errorf("unknown log encoding %q", enc)
}

// InfraEvents returns every infrastructure event in order.
func (s *Store) InfraEvents(ctx context.Context) ([]InfraEvent, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT id, event, group_key, time, outputs, cost, started, duration_s, error, hourly_usd FROM infra ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []InfraEvent
	for rs.Next() {
		var e InfraEvent
		var t, outputs, started string
		var seconds float64
		if err := rs.Scan(&e.ID, &e.Event, &e.Group, &t, &outputs, &e.Cost, &started, &seconds, &e.Error, &e.HourlyUSD); err != nil {
			return nil, err
		}
		if e.Time, err = parseTime(t); err != nil {
			return nil, err
		}
		if started != "" {
			if e.Started, err = parseTime(started); err != nil {
				return nil, err
			}
		}
		e.Duration = time.Duration(seconds * float64(time.Second))
		e.Outputs = json.RawMessage(outputs)
		e.Group = currentGroupKey(e.Group)
		out = append(out, e)
	}
	return out, rs.Err()
}

// currentGroupKey reads a recorded group key in the form xp writes now.
// xp once wrote the rows' kafka_version as "kafka=V", which reads like a
// claim of what ran; such a key is read as "kafka_version=V", so a
// campaign begun then is resumed, taken down and costed as the same groups.
// The db keeps what was written.
func currentGroupKey(k string) string {
	return strings.Replace(k, " kafka=", " kafka_version=", 1)
}

// HasProgress reports whether any attempt has been recorded.
func (s *Store) HasProgress(ctx context.Context) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM attempt)`).Scan(&n)
	return n == 1, err
}
