package results

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// SchemaVersion is the newest schema this build writes and reads. A database
// written by a newer xp is refused rather than guessed at.
const SchemaVersion = 6

// ReadableSince is the oldest schema a read-only store (xp analyse, xp
// status) reads as it is: version 5 only added an index, which analysis
// uses for speed, not for its answers, and version 6 tables a campaign
// without a two-stage design does not need (readers look for them). An
// older database is migrated by the next writer that opens it (xp run
// --resume).
const ReadableSince = 4

// migrations[i] takes a database from schema version i to i+1. Append only:
// a released migration is never edited.
var migrations = []string{
	// 0 → 1: the first schema.
	`
CREATE TABLE schema_version (
	version INTEGER NOT NULL,
	applied TEXT NOT NULL
);

CREATE TABLE campaign (
	id          INTEGER PRIMARY KEY CHECK (id = 1),
	name        TEXT NOT NULL,
	spec        TEXT NOT NULL,
	plan        BLOB NOT NULL,
	plan_sha256 TEXT NOT NULL,
	target      TEXT NOT NULL,
	seed        INTEGER NOT NULL,
	xp_version  TEXT NOT NULL,
	host        TEXT NOT NULL,
	created     TEXT NOT NULL
);

CREATE TABLE row (
	run        TEXT PRIMARY KEY,
	plan_order INTEGER NOT NULL UNIQUE,
	cell       TEXT NOT NULL,
	pair       TEXT NOT NULL,
	replicate  INTEGER NOT NULL,
	block      INTEGER NOT NULL,
	plan_row   TEXT NOT NULL,
	state      TEXT NOT NULL DEFAULT 'pending'
		CHECK (state IN ('pending', 'running', 'done', 'invalid', 'failed'))
);
CREATE INDEX row_state ON row (state);

CREATE TABLE attempt (
	id          INTEGER PRIMARY KEY,
	run         TEXT NOT NULL REFERENCES row (run),
	number      INTEGER NOT NULL,
	started     TEXT NOT NULL,
	ended       TEXT,
	phase       TEXT NOT NULL DEFAULT '',
	outcome     TEXT CHECK (outcome IN ('done', 'invalid', 'failed', 'interrupted')),
	reasons     TEXT NOT NULL DEFAULT '[]',
	error       TEXT NOT NULL DEFAULT '',
	environment TEXT NOT NULL DEFAULT '{}',
	UNIQUE (run, number)
);
CREATE INDEX attempt_outcome ON attempt (outcome);

CREATE TABLE metric (
	attempt INTEGER NOT NULL REFERENCES attempt (id),
	name    TEXT NOT NULL,
	value   REAL NOT NULL,
	PRIMARY KEY (attempt, name)
) WITHOUT ROWID;

CREATE TABLE histogram (
	attempt INTEGER NOT NULL REFERENCES attempt (id),
	kind    TEXT NOT NULL,
	second  INTEGER NOT NULL,
	data    BLOB NOT NULL,
	UNIQUE (attempt, kind, second)
);

CREATE TABLE series (
	attempt   INTEGER NOT NULL REFERENCES attempt (id),
	second    INTEGER NOT NULL,
	published INTEGER NOT NULL,
	consumed  INTEGER NOT NULL,
	backlog   INTEGER NOT NULL,
	PRIMARY KEY (attempt, second)
) WITHOUT ROWID;

CREATE TABLE telemetry (
	attempt INTEGER NOT NULL REFERENCES attempt (id),
	host    TEXT NOT NULL,
	ts      REAL NOT NULL,
	metric  TEXT NOT NULL,
	value   REAL NOT NULL
);
CREATE INDEX telemetry_attempt ON telemetry (attempt);

CREATE TABLE log (
	attempt  INTEGER NOT NULL REFERENCES attempt (id),
	name     TEXT NOT NULL,
	encoding TEXT NOT NULL CHECK (encoding IN ('gzip', 'zstd')),
	data     BLOB NOT NULL,
	UNIQUE (attempt, name)
);

CREATE TABLE infra (
	id        INTEGER PRIMARY KEY,
	event     TEXT NOT NULL,
	group_key TEXT NOT NULL,
	time      TEXT NOT NULL,
	outputs   TEXT NOT NULL DEFAULT '{}',
	cost      REAL NOT NULL DEFAULT 0
);
`,
	// 1 → 2: analysis reads only whole-run histograms; without this index
	// it scans every per-second blob of the campaign.
	`
CREATE INDEX histogram_whole_run ON histogram (attempt, kind) WHERE second = -1;
`,
	// 2 → 3: a Terraform apply or destroy records when it started, how
	// long it took, Terraform's error, and what the group costs an hour
	// while up.
	`
ALTER TABLE infra ADD COLUMN started TEXT NOT NULL DEFAULT '';
ALTER TABLE infra ADD COLUMN duration_s REAL NOT NULL DEFAULT 0;
ALTER TABLE infra ADD COLUMN error TEXT NOT NULL DEFAULT '';
ALTER TABLE infra ADD COLUMN hourly_usd REAL NOT NULL DEFAULT 0;
`,
	// 3 → 4: an attempt of a matched set that was left partial (its
	// partner interrupted) is kept as evidence but superseded: the set runs
	// again whole on one cluster, and analysis pairs only the new attempts.
	`
ALTER TABLE attempt ADD COLUMN superseded TEXT NOT NULL DEFAULT '';
`,
	// 4 → 5: analysis reads, per attempt, host and metric, only the
	// samples around the measured window's ends and the window's largest
	// (TelemetryAround); this covering index makes each a seek. It leads
	// with attempt, so it serves every lookup telemetry_attempt served,
	// which goes (evidence stays small: one index, not two).
	`
CREATE INDEX telemetry_series ON telemetry (attempt, host, metric, ts, value);
DROP INDEX telemetry_attempt;
`,
	// 5 → 6: a two-stage design (xp run --halfwidth) records what it asked
	// for and, once the first stage is done, how many replicates each
	// configuration gets; its second-stage rows join the row table.
	`
CREATE TABLE two_stage (
	id             INTEGER PRIMARY KEY CHECK (id = 1),
	halfwidth      REAL NOT NULL,
	metric         TEXT NOT NULL,
	confidence     REAL NOT NULL,
	max_replicates INTEGER NOT NULL,
	first_stage    INTEGER NOT NULL,
	decided        TEXT NOT NULL DEFAULT ''
);

CREATE TABLE stage_decision (
	pair       TEXT PRIMARY KEY,
	treatment  TEXT NOT NULL,
	sets       INTEGER NOT NULL,
	sd         REAL,
	needed     INTEGER NOT NULL,
	replicates INTEGER NOT NULL
);
`,
}

// schemaVersion reads the version of an open database: 0 for an empty one.
func schemaVersion(ctx context.Context, q querier) (int, error) {
	var n int
	err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'`).Scan(&n)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		var tables int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&tables); err != nil {
			return 0, err
		}
		if tables > 0 {
			return 0, ErrNotCampaign
		}
		return 0, nil
	}
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil {
		return 0, err
	}
	return int(v.Int64), nil
}

// migrate brings the database to SchemaVersion, one transaction per step.
func migrate(ctx context.Context, db *sql.DB, path string) error {
	for {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		v, err := schemaVersion(ctx, tx)
		if err != nil {
			tx.Rollback()
			return err
		}
		if v > SchemaVersion {
			tx.Rollback()
			return &SchemaError{Path: path, Have: v, Want: SchemaVersion}
		}
		if v == SchemaVersion {
			return tx.Rollback()
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate %s to schema %d: %w", path, v+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied) VALUES (?, ?)`,
			v+1, formatTime(time.Now())); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
}
