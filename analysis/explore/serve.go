package explore

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/xp-bench/xp/results"
)

// Server serves the explorer's pages from campaign databases, each opened
// read-only for every read (no lock: `xp run` keeps writing beside it). A
// campaign is read and analysed again when its database has changed since
// the last request, so the pages, which reload their data, follow a
// running campaign.
type Server struct {
	paths []string
	opt   Options

	// reading[i] is held while campaign i is read, so that requests
	// arriving meanwhile wait for that read rather than start their own.
	reading []sync.Mutex

	mu    sync.Mutex
	camps []*served
	// comps is the comparisons of the campaigns as last read.
	comps []Comparison
}

// served is one campaign as last read, and the database state it was
// read at.
type served struct {
	stamp string
	c     *Campaign
	ix    *evidenceIndex
}

// NewServer returns the explorer over the databases; each is read on its
// first request.
func NewServer(paths []string, opt Options) *Server {
	return &Server{paths: paths, opt: opt.withDefaults(), camps: make([]*served, len(paths)), reading: make([]sync.Mutex, len(paths))}
}

var (
	campaignFile = regexp.MustCompile(`^c(\d+)\.js$`)
	chunkFile    = regexp.MustCompile(`^c(\d+)-r(\d+)\.js$`)
	effectsFile  = regexp.MustCompile(`^c(\d+)-e(\d+)\.js$`)
)

// ServeHTTP serves index.html, assets/ and data/ as the static site lays
// them out.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "read-only: GET only", http.StatusMethodNotAllowed)
		return
	}
	p := path.Clean(r.URL.Path)
	switch {
	case p == "/" || p == "/index.html":
		s.asset(w, "assets/index.html", "text/html; charset=utf-8")
	case path.Dir(p) == "/assets":
		ct := "application/javascript"
		if path.Ext(p) == ".css" {
			ct = "text/css"
		}
		s.asset(w, "assets/"+path.Base(p), ct)
	case path.Dir(p) == "/data":
		s.data(w, r.Context(), path.Base(p))
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) asset(w http.ResponseWriter, name, ct string) {
	b, err := fs.ReadFile(assets, name)
	if err != nil || path.Base(name) == "SHA256SUMS" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Write(b)
}

// data serves one data script, read from the databases now.
func (s *Server) data(w http.ResponseWriter, ctx context.Context, name string) {
	var body []byte
	var err error
	switch {
	case name == "site.js":
		body, err = s.siteScript(ctx)
	case name == "compare.js":
		if _, err = s.siteScript(ctx); err == nil {
			s.mu.Lock()
			body, err = dataScript("compare", s.comps)
			s.mu.Unlock()
		}
	case campaignFile.MatchString(name):
		i, _ := strconv.Atoi(campaignFile.FindStringSubmatch(name)[1])
		var sv *served
		if sv, err = s.campaign(ctx, i); err == nil {
			body, err = dataScript(campaignName(i), sv.c)
		}
	case effectsFile.MatchString(name):
		m := effectsFile.FindStringSubmatch(name)
		i, _ := strconv.Atoi(m[1])
		k, _ := strconv.Atoi(m[2])
		var sv *served
		if sv, err = s.campaign(ctx, i); err == nil {
			if k >= len(sv.c.EffectParts) {
				err = errNoSuch
			} else {
				body, err = dataScript(effectsName(i, k), sv.c.effectPart(k))
			}
		}
	case chunkFile.MatchString(name):
		m := chunkFile.FindStringSubmatch(name)
		i, _ := strconv.Atoi(m[1])
		k, _ := strconv.Atoi(m[2])
		body, err = s.chunk(ctx, i, k)
	default:
		http.NotFound(w, nil)
		return
	}
	if errors.Is(err, errNoSuch) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/javascript")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
}

// errNoSuch: a data file the databases do not hold.
var errNoSuch = errors.New("no such data file")

// siteScript reads every campaign as it is now and returns data/site.js.
func (s *Server) siteScript(ctx context.Context) ([]byte, error) {
	changed := false
	for i := range s.paths {
		before := s.current(i)
		sv, err := s.campaign(ctx, i)
		if err != nil {
			return nil, err
		}
		changed = changed || sv != before
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	site := &Site{Live: true, opt: s.opt}
	for _, sv := range s.camps {
		site.Campaigns = append(site.Campaigns, sv.c)
	}
	if changed || s.comps == nil {
		site.compare()
		s.comps = site.Comparisons
	}
	return dataScript("site", site.index())
}

func (s *Server) current(i int) *served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.camps[i]
}

// campaign returns campaign i, read again when its database changed.
func (s *Server) campaign(ctx context.Context, i int) (*served, error) {
	if i < 0 || i >= len(s.paths) {
		return nil, errNoSuch
	}
	s.reading[i].Lock()
	defer s.reading[i].Unlock()
	stamp := dbStamp(s.paths[i])
	if sv := s.current(i); sv != nil && sv.stamp == stamp {
		return sv, nil
	}
	c, err := LoadCampaign(ctx, s.paths[i], i, s.opt)
	if err != nil {
		return nil, err
	}
	st, err := results.OpenReadOnly(ctx, s.paths[i])
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ix, err := readEvidenceIndex(ctx, st)
	if err != nil {
		return nil, err
	}
	sv := &served{stamp: stamp, c: c, ix: ix}
	s.mu.Lock()
	s.camps[i] = sv
	s.mu.Unlock()
	return sv, nil
}

// chunk returns run-evidence file k of campaign i.
func (s *Server) chunk(ctx context.Context, i, k int) ([]byte, error) {
	sv, err := s.campaign(ctx, i)
	if err != nil {
		return nil, err
	}
	if k < 0 || k >= sv.c.Chunks {
		return nil, errNoSuch
	}
	st, err := results.OpenReadOnly(ctx, s.paths[i])
	if err != nil {
		return nil, err
	}
	defer st.Close()
	from := k * sv.c.RunsPerChunk
	ds, err := sv.c.runDetails(ctx, st, from, from+sv.c.RunsPerChunk, sv.ix, s.opt.MaxSeriesPoints)
	if err != nil {
		return nil, err
	}
	return dataScript(chunkName(i, k), ds)
}

// dbStamp says what state a database is in: its and its write-ahead
// log's size and modification time. A commit changes the log.
func dbStamp(p string) string {
	stamp := ""
	for _, f := range []string{p, p + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			stamp += strconv.FormatInt(fi.Size(), 10) + "@" + fi.ModTime().Format(time.RFC3339Nano) + ";"
		}
	}
	return stamp
}
