package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/xp-bench/xp/internal/browsertest"
	"github.com/xp-bench/xp/results"
)

// TestExploreServeFollowsRunningCampaign starts `xp run` on the embedded
// cluster and `xp explore --serve` beside it, each a process of its own,
// and watches the campaigns page in headless Chromium: the rows done
// advance while the effects are marked provisional, and the mark goes when
// the campaign ends. xp run finishes every row with exit 0, never refused
// or slowed into an error by the explorer's reads.
func TestExploreServeFollowsRunningCampaign(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := expandSpec(t, dir, "live", `campaign: live
seed: 11
replicates: 3
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls]
fixed: {platform: local, brokers: 1, message_size: 256, acks: all, target_rate: 200, warmup_s: 1, duration_s: 1, drain_timeout_s: 5}
`)
	db := filepath.Join(dir, "live.db")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := exec.Command(self, "run", plan, "--db", db)
	run.Env = append(os.Environ(), "XP_TEST_AS_XP=1")
	var runErr bytes.Buffer
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- run.Wait() }()
	t.Cleanup(func() {
		if run.ProcessState == nil {
			run.Process.Signal(syscall.SIGKILL)
			<-ran
		}
	})

	// The explorer starts once xp run has registered the campaign.
	deadline := time.Now().Add(time.Minute)
	for !registered(db) {
		if time.Now().After(deadline) {
			t.Fatalf("xp run registered no campaign in %s: %s", db, runErr.String())
		}
		time.Sleep(50 * time.Millisecond) // polling the db for the campaign's registration
	}
	serve := exec.Command(self, "explore", db, "--serve", "127.0.0.1:0", "--resamples", "200")
	serve.Env = append(os.Environ(), "XP_TEST_AS_XP=1")
	out, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var serveErr bytes.Buffer
	serve.Stderr = &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "serving ")
	if err != nil || !ok || !strings.HasPrefix(addr, "http://127.0.0.1:") {
		t.Fatalf("xp explore --serve said %q (%v): %s", line, err, serveErr.String())
	}

	tab := browsertest.New(t).Tab(t)
	tab.Do(chromedp.Navigate(addr + "#/campaigns"))
	tab.WaitFor(`!!document.querySelector('#rows-0 td[data-col="done"]')`, time.Minute)
	type view struct {
		Done        int  `json:"done"`
		Provisional bool `json:"provisional"`
	}
	read := func() view {
		return browsertest.Eval[view](tab, `({done: +(document.querySelector('#rows-0 td[data-col="done"]') || {dataset: {value: -1}}).dataset.value,
			provisional: !!document.querySelector('[data-campaign="0"] [data-provisional]')})`)
	}
	var seen []int
	provisional := false
	var runDone error
	finished := false
	deadline = time.Now().Add(4 * time.Minute)
	for {
		v := read()
		if len(seen) == 0 || v.Done != seen[len(seen)-1] {
			seen = append(seen, v.Done)
		}
		if v.Provisional && !provisional && v.Done > 0 && *exploreShots != "" {
			tab.Screenshot(filepath.Join(*exploreShots, "live-campaigns.png"))
		}
		provisional = provisional || v.Provisional
		if !finished {
			select {
			case runDone = <-ran:
				finished = true
			default:
			}
		}
		if finished && !v.Provisional && v.Done == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 4 minutes the page shows %+v (done counts seen %v; xp run finished: %v): %s", v, seen, finished, runErr.String())
		}
		time.Sleep(200 * time.Millisecond) // polling the page as a reader would watch it
	}
	if runDone != nil {
		t.Fatalf("xp run beside the explorer: %v: %s", runDone, runErr.String())
	}
	if strings.Contains(runErr.String(), "locked") || strings.Contains(runErr.String(), "busy") {
		t.Errorf("xp run met a lock: %s", runErr.String())
	}
	t.Logf("rows done as the page showed them: %v", seen)
	if !provisional {
		t.Error("the page never marked the running campaign's effects provisional")
	}
	// The count advanced while the campaign ran: at least one value between
	// none and all was shown, and the values only grew.
	between := 0
	for i, n := range seen {
		if i > 0 && n < seen[i-1] {
			t.Errorf("rows done went back: %v", seen)
		}
		if n > 0 && n < 6 {
			between++
		}
	}
	if between == 0 {
		t.Errorf("the page showed rows done %v: never a count between 0 and 6 while the campaign ran", seen)
	}
	st, err := results.OpenReadOnly(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.Progress(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p.Rows[results.Done] != 6 {
		t.Errorf("rows by state %v, want 6 done", p.Rows)
	}

	// A run of the real campaign shows its evidence: phases from the
	// runner's log, host telemetry by role, the environment's broker.
	tab.Do(chromedp.Navigate(addr + "#/runs?c=0"))
	tab.WaitFor(`document.body.dataset.ready === location.hash && !!document.querySelector('#runs tbody a')`, time.Minute)
	browsertest.Eval[chromedp.Void](tab, `document.querySelector('#runs tbody a').click()`)
	tab.WaitFor(`document.body.dataset.ready === location.hash && location.hash.startsWith("#/run?")`, time.Minute)
	page := browsertest.Eval[string](tab, `document.getElementById('main').innerText`)
	for _, want := range []string{"measure", "drain", "Host telemetry by role", "cpu_s", "kfake", "latency by percentile"} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %q:\n%.3000s", want, page)
		}
	}
	if *exploreShots != "" {
		tab.Screenshot(filepath.Join(*exploreShots, "live-run.png"))
	}
}

var exploreShots = flag.String("screenshots", "", "write the explorer's screenshots into this directory")

// registered says whether the db holds a registered campaign yet.
func registered(db string) bool {
	if _, err := os.Stat(db); err != nil {
		return false
	}
	st, err := results.OpenReadOnly(context.Background(), db)
	if err != nil {
		return false
	}
	defer st.Close()
	p, err := st.Progress(context.Background())
	return err == nil && p.Total > 0
}

// TestExploreBadInput: each mistake is refused with exit 2 and a message
// naming the flag or file, before any site is written.
func TestExploreBadInput(t *testing.T) {
	dir := t.TempDir()
	notDB := writeRunFile(t, dir, "notes.txt", "not a campaign\n")
	site := filepath.Join(dir, "site")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no db", []string{"explore", "--out", site}, "requires at least 1 arg"},
		{"neither --out nor --serve", []string{"explore", notDB}, "give --out DIR"},
		{"both --out and --serve", []string{"explore", notDB, "--out", site, "--serve", ":0"}, "one of them"},
		{"a db that does not exist", []string{"explore", filepath.Join(dir, "none.db"), "--out", site}, "none.db is not a campaign db"},
		{"a file that is no campaign", []string{"explore", notDB, "--out", site}, "notes.txt"},
		{"serving beyond loopback", []string{"explore", notDB, "--serve", "0.0.0.0:8080"}, "loopback only"},
		{"an address without a port", []string{"explore", notDB, "--serve", "127.0.0.1"}, "want HOST:PORT"},
		{"too few resamples", []string{"explore", notDB, "--out", site, "--resamples", "5"}, "--resamples 5"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runXP(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, stderr, exitUsage, tc.want)
			}
			if _, err := os.Stat(site); err == nil {
				t.Errorf("a refused explore wrote %s", site)
			}
		})
	}
}

func TestLoopbackAddr(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{":8080", "127.0.0.1:8080", ""},
		{"localhost:0", "127.0.0.1:0", ""},
		{"127.0.0.1:9000", "127.0.0.1:9000", ""},
		{"[::1]:9000", "[::1]:9000", ""},
		{"0.0.0.0:8080", "", "loopback only"},
		{"example.org:80", "", "loopback only"},
		{"8080", "", "want HOST:PORT"},
	}
	for _, tc := range tests {
		got, err := loopbackAddr(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("loopbackAddr(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}
