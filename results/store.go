// Package results is the evidence store: the SQLite schema of a campaign
// database, its migrations, and the only code that writes or reads one.
//
// A database holds one campaign. One process writes it at a time (a lock file
// beside it, released by the kernel however the process ends); any number
// read it. Every state change is one transaction, so a process killed at any
// instant loses at most the attempt in flight.
package results

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Errors callers branch on.
var (
	// ErrLocked: another process is writing the database.
	ErrLocked = errors.New("campaign database is in use by another xp process")
	// ErrNewerSchema: the database was written by a newer xp.
	ErrNewerSchema = errors.New("campaign database has a newer schema than this xp understands")
	// ErrOlderSchema: a read-only open found a database written by an
	// older xp, from before ReadableSince.
	ErrOlderSchema = errors.New("campaign database has an older schema than this xp reads without migrating it")
	// ErrNoDatabase: a read-only open of a file that does not exist.
	ErrNoDatabase = errors.New("no campaign database")
	// ErrNotCampaign: the file is an SQLite database but not an xp campaign.
	ErrNotCampaign = errors.New("not an xp campaign database")
	// ErrNoCampaign: the database has no campaign registered yet.
	ErrNoCampaign = errors.New("no campaign registered in the database")
	// ErrPlanMismatch: a different plan is already registered.
	ErrPlanMismatch = errors.New("a different plan is registered in this database")
	// ErrReadOnly: a write through a store opened read-only.
	ErrReadOnly = errors.New("campaign database opened read-only")
)

// LockedError says who holds the writer lock.
type LockedError struct {
	Path string
	PID  int // 0 when unknown
}

func (e *LockedError) Error() string {
	who := "another xp process"
	if e.PID > 0 {
		who = fmt.Sprintf("another xp process (pid %d)", e.PID)
	}
	return fmt.Sprintf("%s is in use by %s; wait for it to finish or stop it, then run again", e.Path, who)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// SchemaError reports a database whose schema this build cannot use.
type SchemaError struct {
	Path       string
	Have, Want int
}

func (e *SchemaError) Error() string {
	if e.Have < e.Want {
		return fmt.Sprintf("%s has schema version %d, older than this xp's %d: `xp run PLAN.jsonl --db %s --resume` with this xp migrates it in place, keeping every record",
			e.Path, e.Have, e.Want, e.Path)
	}
	return fmt.Sprintf("%s has schema version %d but this xp knows only up to %d: use a newer xp to read it",
		e.Path, e.Have, e.Want)
}

func (e *SchemaError) Unwrap() error {
	if e.Have < e.Want {
		return ErrOlderSchema
	}
	return ErrNewerSchema
}

// Store is an open campaign database.
type Store struct {
	db       *sql.DB
	path     string
	readOnly bool
	lock     *os.File
	// made are the -wal and -shm files a read-only open created (they
	// did not exist before it); Close has SQLite remove them again.
	made []string
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Open opens the campaign database at path for writing, creating it if it
// does not exist and migrating it to SchemaVersion. It takes the writer lock
// (path + ".lock") first and fails with a *LockedError while another
// process holds it. A database with a newer schema, or not a campaign, is
// refused before anything is changed.
func Open(ctx context.Context, path string) (*Store, error) {
	return OpenChecked(ctx, path, nil)
}

// OpenChecked is Open with a check of an existing database's campaign and
// progress, run under the writer lock before anything is changed (no WAL
// switch, no migration): an error from check is returned as is and leaves
// the database untouched.
func OpenChecked(ctx context.Context, path string, check func(Peek) error) (*Store, error) {
	if path == "" {
		return nil, errors.New("campaign database path is empty")
	}
	exists := false
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return nil, fmt.Errorf("campaign database %s is a directory", path)
		}
		exists = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("cannot write campaign database %s: %w", path, err)
	}

	lock, err := acquireLock(path)
	if err != nil {
		return nil, err
	}
	if exists {
		p, err := inspectLocked(ctx, path)
		if err == nil && check != nil {
			err = check(p)
		}
		if err != nil {
			releaseLock(lock)
			return nil, err
		}
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		releaseLock(lock)
		return nil, err
	}
	db.SetMaxOpenConns(1) // one writer connection
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	s := &Store{db: db, path: path, lock: lock}
	if err := s.init(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil {
		return fmt.Errorf("open campaign database %s: %w", s.path, err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("open campaign database %s: journal mode %q, want wal", s.path, mode)
	}
	return migrate(ctx, s.db, s.path)
}

// OpenReadOnly opens an existing campaign database for reading. It takes no
// lock and may run while a writer works.
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoDatabase, path)
	}
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("campaign database %s is a directory", path)
	}
	db, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		return nil, err
	}
	// Reading a WAL database creates -wal and -shm beside it. A file that
	// proves not to be a campaign must not gain them: those this open
	// made are removed again when it fails, and by Close otherwise.
	made := sidecarsAbsent(path)
	s := &Store{db: db, path: path, readOnly: true, made: made}
	defer func() {
		if s != nil || len(made) == 0 {
			return
		}
		if _, alive := Writer(path); alive {
			return // the sidecars may be a writer's now
		}
		if fi, err := os.Lstat(path + "-wal"); err == nil && fi.Size() > 0 {
			return
		}
		for _, f := range made {
			os.Remove(f)
		}
	}()
	v, err := schemaVersion(ctx, db)
	if err != nil {
		db.Close()
		s = nil
		if errors.Is(err, ErrNotCampaign) || notSQLite(err) {
			return nil, fmt.Errorf("%s: %w", path, ErrNotCampaign)
		}
		return nil, fmt.Errorf("read campaign database %s: %w", path, err)
	}
	if v < ReadableSince || v > SchemaVersion {
		db.Close()
		s = nil
		if v == 0 {
			return nil, fmt.Errorf("%s: %w", path, ErrNoCampaign)
		}
		return nil, &SchemaError{Path: path, Have: v, Want: SchemaVersion}
	}
	return s, nil
}

// notSQLite says whether err is SQLite's SQLITE_NOTADB: the file is not
// an SQLite database at all (a text file, a JSONL plan), so not a
// campaign either.
func notSQLite(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_NOTADB
}

// sidecarsAbsent returns path's -wal and -shm files that do not exist
// now.
func sidecarsAbsent(path string) []string {
	var out []string
	for _, f := range []string{path + "-wal", path + "-shm"} {
		if _, err := os.Lstat(f); errors.Is(err, os.ErrNotExist) {
			out = append(out, f)
		}
	}
	return out
}

// Close closes the database and releases the writer lock. A read-only
// store that created the -wal and -shm files has them removed again.
func (s *Store) Close() error {
	err := s.db.Close()
	if s.lock != nil {
		releaseLock(s.lock)
		s.lock = nil
	}
	if s.readOnly && len(s.made) > 0 {
		tidySidecars(s.path)
		s.made = nil
	}
	return err
}

// tidySidecars removes the empty -wal and the -shm a reader left beside
// path. A read-only connection cannot delete them; SQLite itself does when
// the last connection that may write closes, under its own locks, so a
// writer that has the database open meanwhile keeps them (no race with
// `xp run`). Only an empty WAL is handled, so closing checkpoints nothing
// and the database file is not written. Failures leave the files, which
// are harmless.
func tidySidecars(path string) {
	if fi, err := os.Lstat(path + "-wal"); err != nil || fi.Size() > 0 {
		return
	}
	if _, alive := Writer(path); alive {
		return
	}
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		return
	}
	db.SetMaxOpenConns(1)
	var v int
	db.QueryRow(`PRAGMA schema_version`).Scan(&v)
	db.Close()
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Add("_pragma", "synchronous(FULL)")
		q.Set("_txlock", "immediate")
	}
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q.Encode()}
	return u.String()
}

// acquireLock takes an exclusive flock on path+".lock" and writes our pid
// into it. The kernel drops the lock when the process ends, even by SIGKILL,
// so a stale file never blocks the next run. A clean release removes the
// file (releaseLock).
func acquireLock(path string) (*os.File, error) {
	lp := path + ".lock"
	for try := 0; ; try++ {
		f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			dir := filepath.Dir(path)
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("cannot create campaign database %s: directory %s does not exist", path, dir)
			}
			if errors.Is(err, os.ErrPermission) {
				return nil, fmt.Errorf("cannot write campaign database %s: no write permission in %s", path, dir)
			}
			return nil, fmt.Errorf("cannot write campaign database %s: %w", path, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			b, _ := os.ReadFile(lp)
			f.Close()
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &LockedError{Path: path, PID: pid}
			}
			return nil, fmt.Errorf("lock campaign database %s: %w", path, err)
		}
		// The previous holder may have removed the file between our open
		// and our lock; then we locked a file nobody else sees. Lock the
		// file the path names, or try again.
		held, err1 := f.Stat()
		named, err2 := os.Stat(lp)
		if err1 != nil || err2 != nil || !os.SameFile(held, named) {
			f.Close()
			if try < 10 {
				continue
			}
			return nil, fmt.Errorf("lock campaign database %s: the lock file keeps changing", path)
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		}
		// The database itself must be writable too. access(2), not open(2):
		// closing a descriptor of the database would drop SQLite's POSIX
		// locks held by other connections of this process.
		if _, err := os.Stat(path); err == nil {
			if err := syscall.Access(path, 2 /* W_OK */); err != nil {
				releaseLock(f)
				return nil, fmt.Errorf("cannot write campaign database %s: %w", path, err)
			}
		}
		return f, nil
	}
}

// releaseLock removes the lock file while still holding it, then drops the
// lock (acquireLock's inode check makes the removal safe).
func releaseLock(f *os.File) {
	os.Remove(f.Name())
	f.Close()
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// timeLayout is fixed width so that stored times sort as text.
const timeLayout = "2006-01-02T15:04:05.000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(timeLayout, s)
}

// IntegrityCheck runs PRAGMA integrity_check and returns its first line
// ("ok" for a sound database).
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	var r string
	err := s.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&r)
	return r, err
}

// Writer returns the pid recorded in the database's lock file and whether a
// process with that pid is alive: a hint for status displays (the pid of a
// killed writer may have been reused).
func Writer(path string) (pid int, alive bool) {
	b, err := os.ReadFile(path + ".lock")
	if err != nil {
		return 0, false
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	err = syscall.Kill(pid, 0)
	return pid, err == nil || errors.Is(err, syscall.EPERM)
}

// Peek is a database's campaign fingerprint and progress.
type Peek struct {
	// Campaign is false for an empty database.
	Campaign   bool
	PlanSHA256 string
	// Rows counts rows by state.
	Rows map[State]int
	// Attempts is the number of attempts recorded.
	Attempts int
}

// inspectLocked reads an existing database's schema version and campaign
// without creating or changing any file; the caller holds the writer lock,
// so nobody writes meanwhile. A clean database is read as immutable (no
// -wal or -shm created); one whose WAL still holds commits (its writer was
// killed) is read through the WAL.
func inspectLocked(ctx context.Context, path string) (Peek, error) {
	q := "mode=ro&immutable=1"
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		// A reader (xp status) may hold the WAL's locks a moment, as it
		// recovers the WAL a killed writer left: wait for it as every
		// other open does, rather than fail the resume.
		q = "mode=ro&_pragma=busy_timeout(10000)"
	}
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return Peek{}, err
	}
	defer db.Close()
	v, err := schemaVersion(ctx, db)
	switch {
	case errors.Is(err, ErrNotCampaign):
		return Peek{}, fmt.Errorf("%s: %w", path, err)
	case err != nil:
		return Peek{}, fmt.Errorf("read campaign database %s: %w", path, err)
	case v > SchemaVersion:
		return Peek{}, &SchemaError{Path: path, Have: v, Want: SchemaVersion}
	case v == 0:
		return Peek{}, nil
	}
	return peek(ctx, db)
}

// Peek reads the campaign fingerprint and progress of the open store.
func (s *Store) Peek(ctx context.Context) (Peek, error) { return peek(ctx, s.db) }

func peek(ctx context.Context, q querier) (Peek, error) {
	var p Peek
	err := q.QueryRowContext(ctx, `SELECT plan_sha256 FROM campaign WHERE id = 1`).Scan(&p.PlanSHA256)
	if errors.Is(err, sql.ErrNoRows) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	p.Campaign = true
	p.Rows = map[State]int{}
	rs, err := q.QueryContext(ctx, `SELECT state, count(*) FROM row GROUP BY state`)
	if err != nil {
		return p, err
	}
	defer rs.Close()
	for rs.Next() {
		var st string
		var n int
		if err := rs.Scan(&st, &n); err != nil {
			return p, err
		}
		p.Rows[State(st)] = n
	}
	if err := rs.Err(); err != nil {
		return p, err
	}
	err = q.QueryRowContext(ctx, `SELECT count(*) FROM attempt`).Scan(&p.Attempts)
	return p, err
}
