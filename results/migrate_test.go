package results

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// A database written at schema 1 opens at SchemaVersion with its data
// intact, and the whole-run histogram read uses the index migration 2 adds.
func TestMigrateFromSchema1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migrations[0],
		`INSERT INTO schema_version (version, applied) VALUES (1, 'then')`,
		`INSERT INTO campaign (id, name, spec, plan, plan_sha256, target, seed, xp_version, host, created)
			VALUES (1, 'old', '', x'00', 'sha', 'local', 1, 'v1', '{}', '2026-01-01T00:00:00.000000Z')`,
		`INSERT INTO row (run, plan_order, cell, pair, replicate, block, plan_row, state)
			VALUES ('a-r1', 1, 'a', 'p', 1, 1, '{}', 'done')`,
		`INSERT INTO attempt (run, number, started, ended, outcome) VALUES ('a-r1', 1,
			'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:10.000000Z', 'done')`,
		`INSERT INTO histogram (attempt, kind, second, data) VALUES (1, 'publish', -1, x'1c'), (1, 'publish', 0, x'1c')`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%v: %s", err, q)
		}
	}
	raw.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := schemaVersion(ctx, s.db)
	if err != nil || v != SchemaVersion {
		t.Fatalf("version %d, %v; want %d", v, err, SchemaVersion)
	}
	c, err := s.Campaign(ctx)
	if err != nil || c.Name != "old" {
		t.Fatalf("campaign after migration: %+v, %v", c, err)
	}
	hs, err := s.WholeRunHistograms(ctx, KindPublish)
	if err != nil || len(hs) != 1 {
		t.Fatalf("whole-run histograms %v, %v", hs, err)
	}
	var plan strings.Builder
	rs, err := s.db.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT attempt, kind, data FROM histogram WHERE second = -1 AND kind IN (?) ORDER BY attempt, kind`, KindPublish)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var id, parent, notused int
		var detail string
		rs.Scan(&id, &parent, &notused, &detail)
		plan.WriteString(detail + "\n")
	}
	rs.Close()
	if !strings.Contains(plan.String(), "histogram_whole_run") {
		t.Fatalf("whole-run read does not use the index:\n%s", plan.String())
	}
}
