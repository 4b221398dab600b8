package results

import (
	"context"
	"strings"
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
