package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/local/localtarget"
	"github.com/xp-bench/xp/results"
)

// xpBinDir holds the built binary, removed by TestMain.
var xpBinDir string

// buildXP builds the xp binary once per test binary.
var buildXP = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "xp-bin-")
	if err != nil {
		return "", err
	}
	xpBinDir = dir
	bin := filepath.Join(dir, "xp")
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go not on PATH: the test builds xp with it: %w", err)
	}
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/xp-bench/xp/cmd/xp")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/xp: %v\n%s", err, out)
	}
	return bin, nil
})

func xpBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildXP()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestMain(m *testing.M) {
	localtarget.RunChildIfAsked() // the local target's cluster and gateway processes
	code := m.Run()
	if xpBinDir != "" {
		os.RemoveAll(xpBinDir)
	}
	os.Exit(code)
}

// childPids lists the child processes of pid (of any of its threads).
func childPids(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// child is a running `xp run` whose stderr lines arrive on lines.
type child struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

func startXP(t *testing.T, bin string, args ...string) *child {
	t.Helper()
	return startXPWith(t, bin, nil, args...)
}

// startXPWith is startXP with setup applied to the command before it starts.
func startXPWith(t *testing.T, bin string, setup func(*exec.Cmd), args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(bin, args...), lines: make(chan string, 1024), stderr: &syncBuffer{},
		done: make(chan struct{})}
	if setup != nil {
		setup(c.cmd)
	}
	pr, pw := io.Pipe()
	c.cmd.Stderr = pw
	c.cmd.Stdout = io.Discard
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			c.stderr.Write([]byte(sc.Text() + "\n"))
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		close(c.lines)
	}()
	go func() {
		c.err = c.cmd.Wait()
		pw.Close()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

var phaseRE = regexp.MustCompile(`phase=(\w+)`)

// waitPhase reads lines until one names phase, or the child ends, or the
// deadline passes. It returns whether the phase was seen.
func (c *child) waitPhase(t *testing.T, phase string, deadline time.Duration) bool {
	t.Helper()
	timeout := time.After(deadline)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				return false
			}
			if m := phaseRE.FindStringSubmatch(line); m != nil && m[1] == phase {
				return true
			}
		case <-timeout:
			t.Fatalf("no phase=%s within %s; stderr:\n%s", phase, deadline, c.stderr.String())
		}
	}
}

func (c *child) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(within):
		t.Fatalf("xp did not exit within %s; stderr:\n%s", within, c.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if c.err != nil {
		t.Fatal(c.err)
	}
	return 0
}

// runningAttempts returns the ids of attempts without an outcome.
func runningAttempts(t *testing.T, db string) []int64 {
	t.Helper()
	ctx := context.Background()
	s, err := results.OpenReadOnly(ctx, db)
	if errors.Is(err, results.ErrNoCampaign) || errors.Is(err, results.ErrNoDatabase) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, err := s.Attempts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, a := range atts {
		if a.Outcome == "" {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// TestSurvivesSIGKILL kills `xp run` with SIGKILL in every phase (at least
// once each, seven times in all, at a random moment within the phase),
// resumes after each kill, and checks that no finished run was lost and no
// killed one was counted.
func TestSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	bin := xpBinary(t)
	dir := t.TempDir()
	plan := writePlan(t, dir, "kill", smallSpec("kill", []string{"plaintext", "tls", "mtls"}, 1))
	db := filepath.Join(dir, "kill.db")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	// Each phase at least once, in an order that moves through the
	// campaign; the random delay lands the kill somewhere inside the phase.
	phases := []string{"provision", "warmup", "measure", "drain", "write", "measure", "warmup"}
	maxDelay := map[string]time.Duration{"provision": 50 * time.Millisecond, "warmup": 800 * time.Millisecond,
		"measure": 1500 * time.Millisecond, "drain": 0, "write": 0}
	killedAttempts := map[int64]string{}
	killedIn := map[string]int{}
	resume := false
	for _, phase := range phases {
		// No group warm-up (--warmup-cap 0) here and in the tests below:
		// none of them looks at it.
		args := []string{"run", plan, "--db", db, "--warmup-cap", "0"}
		if resume {
			args = append(args, "--resume")
		}
		c := startXP(t, bin, args...)
		if !c.waitPhase(t, phase, 90*time.Second) {
			t.Fatalf("xp ended before phase=%s; stderr:\n%s", phase, c.stderr.String())
		}
		if d := maxDelay[phase]; d > 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(d)))) // a random moment inside the phase, not a wait for a condition
		}
		kids := childPids(c.cmd.Process.Pid)
		if phase != "provision" && len(kids) == 0 {
			t.Errorf("phase %s: xp has no child processes (the local target's cluster runs in one)", phase)
		}
		c.cmd.Process.Signal(syscall.SIGKILL)
		if code := c.exitCode(t, 30*time.Second); code != -int(syscall.SIGKILL) {
			t.Fatalf("xp exited %d before the kill in phase %s; stderr:\n%s", code, phase, c.stderr.String())
		}
		// The cluster and gateway children see their stdin close and end.
		deadline := time.Now().Add(20 * time.Second)
		for _, kid := range kids {
			for alive(kid) {
				if time.Now().After(deadline) {
					t.Fatalf("phase %s: child %d of the killed xp still runs", phase, kid)
				}
				time.Sleep(20 * time.Millisecond) // polling a condition, bounded above
			}
		}
		killedIn[phase]++
		for _, id := range runningAttempts(t, db) {
			killedAttempts[id] = phase
		}
		resume = true
	}
	// Finish the campaign.
	c := startXP(t, bin, "run", plan, "--db", db, "--resume", "--warmup-cap", "0")
	if code := c.exitCode(t, 2*time.Minute); code != 0 {
		t.Fatalf("final resume exited %d; stderr:\n%s", code, c.stderr.String())
	}
	if _, err := os.Stat(db + ".work"); !os.IsNotExist(err) {
		t.Errorf("work directory (keys of killed runs) left behind: %v", err)
	}
	for _, p := range []string{"provision", "warmup", "measure", "drain", "write"} {
		if killedIn[p] == 0 {
			t.Errorf("no kill in phase %s", p)
		}
	}
	if len(killedAttempts) < 4 {
		t.Errorf("only %d kills caught an attempt in flight", len(killedAttempts))
	}

	ctx := context.Background()
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.IntegrityCheck(ctx); err != nil || r != "ok" {
		t.Fatalf("integrity_check: %q, %v", r, err)
	}
	atts, err := s.Attempts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]int{}
	for _, a := range atts {
		switch {
		case a.Outcome == results.OutcomeDone && a.Superseded != "":
			// A kill between the members of a matched set leaves it
			// partial: resume runs it again whole, and the earlier
			// member's finished attempt is kept, marked superseded.
			if !strings.HasPrefix(a.Superseded, "its matched set was left partial") {
				t.Errorf("attempt %d of %s superseded for %q", a.ID, a.Run, a.Superseded)
			}
		case a.Outcome == results.OutcomeDone:
			done[a.Run]++
		case a.Outcome == results.OutcomeInterrupted:
			if _, ok := killedAttempts[a.ID]; !ok {
				t.Errorf("attempt %d (%s) is interrupted but no kill caught it", a.ID, a.Run)
			}
			delete(killedAttempts, a.ID)
		default:
			t.Errorf("attempt %d of %s: outcome %q (%s %v)", a.ID, a.Run, a.Outcome, a.Error, a.Reasons)
		}
	}
	for id, phase := range killedAttempts {
		t.Errorf("attempt %d killed in phase %s is not recorded as interrupted", id, phase)
	}
	for run, n := range done {
		if n != 1 {
			t.Errorf("row %s has %d successful attempts that count", run, n)
		}
	}

	// The same plan uninterrupted gives the same set of done rows.
	ref := filepath.Join(dir, "ref.db")
	rc := startXP(t, bin, "run", plan, "--db", ref, "--warmup-cap", "0")
	if code := rc.exitCode(t, 2*time.Minute); code != 0 {
		t.Fatalf("uninterrupted run exited %d; stderr:\n%s", code, rc.stderr.String())
	}
	got, want := readDB(t, db).runsIn(results.Done), readDB(t, ref).runsIn(results.Done)
	if !slices.Equal(got, want) || len(want) != 3 {
		t.Fatalf("done rows after kills %v, uninterrupted %v", got, want)
	}
}

// TestSecondWriterAndSIGINT: a second `xp run` on a db in use is refused
// with a clear message and changes nothing; SIGINT to the first records the
// run in flight as interrupted and exits 130.
func TestSecondWriterAndSIGINT(t *testing.T) {
	t.Parallel()
	bin := xpBinary(t)
	dir := t.TempDir()
	plan := writePlan(t, dir, "two", smallSpec("two", []string{"plaintext", "tls"}, 1))
	db := filepath.Join(dir, "two.db")
	first := startXP(t, bin, "run", plan, "--db", db, "--warmup-cap", "0")
	first.waitPhase(t, "warmup", 60*time.Second)

	second := startXP(t, bin, "run", plan, "--db", db, "--resume")
	if code := second.exitCode(t, 30*time.Second); code != 2 {
		t.Fatalf("second writer exited %d, want 2; stderr:\n%s", code, second.stderr.String())
	}
	want := fmt.Sprintf("in use by another xp process (pid %d)", first.cmd.Process.Pid)
	if !strings.Contains(second.stderr.String(), want) {
		t.Fatalf("second writer's message %q does not say %q", second.stderr.String(), want)
	}

	first.waitPhase(t, "measure", 30*time.Second)
	// xp status reads the db while the writer works.
	out, err := exec.Command(bin, "status", "--db", db, "--json").Output()
	if err != nil {
		t.Fatalf("xp status during the run: %v", err)
	}
	var st Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if st.Writer != first.cmd.Process.Pid || st.Current == nil || st.Rows.Running != 1 || len(st.Infrastructure.Up) != 1 {
		t.Fatalf("status during the run (writer pid %d): %s", first.cmd.Process.Pid, out)
	}
	first.cmd.Process.Signal(os.Interrupt)
	if code := first.exitCode(t, 30*time.Second); code != 130 {
		t.Fatalf("after SIGINT xp exited %d, want 130; stderr:\n%s", code, first.stderr.String())
	}
	if !strings.Contains(first.stderr.String(), "--resume") {
		t.Fatalf("interrupted run does not say how to continue:\n%s", first.stderr.String())
	}
	after := readDB(t, db)
	var outcomes []results.Outcome
	for _, o := range after.attempts {
		outcomes = append(outcomes, o...)
	}
	if !slices.Equal(outcomes, []results.Outcome{results.OutcomeInterrupted}) || len(after.runsIn(results.Pending)) != 2 {
		t.Fatalf("after SIGINT: attempts %v, states %v", after.attempts, after.states)
	}
}

// TestCtrlCToProcessGroup: Ctrl-C in a terminal signals xp's whole process
// group, its cluster and gateway children included. The run in flight
// stops at once (not at the end of its measurement, as when the children
// died under it), is recorded as interrupted, and xp says what it is doing
// and exits 130.
func TestCtrlCToProcessGroup(t *testing.T) {
	t.Parallel()
	bin := xpBinary(t)
	dir := t.TempDir()
	spec := strings.Replace(smallSpec("ctrlc", []string{"plaintext", "tls"}, 1), "duration_s: 2", "duration_s: 120", 1)
	plan := writePlan(t, dir, "ctrlc", spec)
	db := filepath.Join(dir, "ctrlc.db")
	x := startXPWith(t, bin, func(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }, "run", plan, "--db", db, "--warmup-cap", "0")
	if !x.waitPhase(t, "measure", 60*time.Second) {
		t.Fatalf("no measure phase:\n%s", x.stderr.String())
	}
	if len(childPids(x.cmd.Process.Pid)) == 0 {
		t.Fatal("the local target started no child processes")
	}
	signalled := time.Now()
	if err := syscall.Kill(-x.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// Bounded wait: 120 s of measurement remain, so an exit before 30 s
	// means the run was stopped, not waited out.
	if code := x.exitCode(t, 30*time.Second); code != 130 {
		t.Fatalf("exit %d, want 130:\n%s", code, x.stderr.String())
	}
	if !strings.Contains(x.stderr.String(), "xp: interrupt: stopping the run in flight, recording it as interrupted") {
		t.Errorf("no line saying what xp does:\n%s", x.stderr.String())
	}
	ctx := context.Background()
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, err := s.Attempts(ctx)
	if err != nil || len(atts) != 1 || atts[0].Outcome != results.OutcomeInterrupted {
		t.Fatalf("attempts %+v %v", atts, err)
	}
	if d := atts[0].Ended.Sub(signalled); d > 5*time.Second {
		t.Errorf("the attempt ended %s after the signal: the run in flight was waited out, not stopped", d)
	}
}

// TestTwoStageSurvivesSIGKILL kills `xp run --halfwidth` with SIGKILL in
// a measurement of the first stage and again in one of the second, resumes
// with --resume alone after each kill, and checks the books: the design
// and its one decision recorded once, the second stage's matched set
// appended once, every row done with exactly one attempt that counts.
func TestTwoStageSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	bin := xpBinary(t)
	dir := t.TempDir()
	plan := writePlan(t, dir, "twokill", smallSpec("twokill", []string{"plaintext", "tls"}, 2))
	db := filepath.Join(dir, "twokill.db")
	// killIn starts xp with args and SIGKILLs it once a row whose run
	// ends in suffix measures.
	killIn := func(suffix string, args ...string) {
		t.Helper()
		c := startXP(t, bin, args...)
		deadline := time.Now().Add(3 * time.Minute)
		for {
			st, err := ReadStatus(context.Background(), db, time.Now())
			if err == nil && st.Current != nil && st.Current.Phase == "measure" && strings.HasSuffix(st.Current.Run, suffix) {
				break
			}
			select {
			case <-c.done:
				t.Fatalf("xp ended before a row of %s measured; stderr:\n%s", suffix, c.stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no row of %s measured within 3 minutes; stderr:\n%s", suffix, c.stderr.String())
			}
			time.Sleep(20 * time.Millisecond) // polling a condition, bounded above
		}
		c.cmd.Process.Signal(syscall.SIGKILL)
		if code := c.exitCode(t, 30*time.Second); code != -int(syscall.SIGKILL) {
			t.Fatalf("xp exited %d before the kill; stderr:\n%s", code, c.stderr.String())
		}
	}
	killIn("-r1", "run", plan, "--db", db, "--halfwidth", "0.0001%", "--max-replicates", "3", "--warmup-cap", "0")
	killIn("-r3", "run", plan, "--db", db, "--resume", "--warmup-cap", "0")
	c := startXP(t, bin, "run", plan, "--db", db, "--resume", "--warmup-cap", "0")
	if code := c.exitCode(t, 3*time.Minute); code != 0 {
		t.Fatalf("final resume exited %d; stderr:\n%s", code, c.stderr.String())
	}

	ctx := context.Background()
	s, err := results.OpenReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.IntegrityCheck(ctx); err != nil || r != "ok" {
		t.Fatalf("integrity_check: %q, %v", r, err)
	}
	ts, ok, err := s.ReadTwoStage(ctx)
	if err != nil || !ok || ts.FirstStage != 2 || len(ts.Decisions) != 1 || ts.Decisions[0].Replicates != 3 {
		t.Fatalf("two-stage design %+v (%v, %v): want the first stage of 2 and one decision for 3 replicates", ts, ok, err)
	}
	st := readDB(t, db)
	if len(st.states) != 6 || len(st.runsIn(results.Done)) != 6 {
		t.Fatalf("rows %v: want the 4 of the plan and the 2 of the second stage, all done", st.states)
	}
	atts, err := s.Attempts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done, interrupted := map[string]int{}, 0
	for _, a := range atts {
		switch {
		case a.Outcome == results.OutcomeDone && a.Superseded == "":
			done[a.Run]++
		case a.Outcome == results.OutcomeInterrupted:
			interrupted++
		}
	}
	for run, n := range done {
		if n != 1 {
			t.Errorf("row %s has %d done attempts that count", run, n)
		}
	}
	if interrupted != 2 {
		t.Errorf("%d interrupted attempts, want the 2 the kills caught", interrupted)
	}
}
