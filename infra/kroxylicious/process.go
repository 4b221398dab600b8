package kroxylicious

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/childproc"
)

// Options of Start.
type Options struct {
	// Home is an unpacked release: the directory holding
	// bin/kroxylicious-start.sh (Unpacked returns one).
	Home string
	// Config is the proxy's config file.
	Config string
	// JavaHome is the JAVA_HOME it runs on; "" = the java on PATH.
	JavaHome string
	// JavaOptions are passed to java (JAVA_OPTIONS), e.g. a heap size.
	JavaOptions string
	// Log, when set, receives the proxy's output (standard output and
	// error) as it comes; the last of it is kept either way (Tail).
	Log io.Writer
	// Ready is the address (the bootstrap) whose answer to a Kafka
	// ApiVersions request means the proxy serves; ReadyTLS the TLS of the
	// client leg (nil: plaintext).
	Ready    string
	ReadyTLS *tls.Config
	// Timeout bounds the start; default 2 minutes.
	Timeout time.Duration
}

// Process is a Kroxylicious proxy running as a child process, in a
// process group of its own, killed if xp dies (childproc: the parent-death
// signal).
type Process struct {
	proc *childproc.Proc
	tail *tailBuffer
}

// StartError is a proxy that exited or did not serve in time: its exit
// and the end of its output.
type StartError struct {
	// Exited is true when the process ended (Err is its exit status),
	// false when it was not ready in time and was stopped.
	Exited bool
	Err    error
	// Log is the last lines of its output.
	Log string
}

func (e *StartError) Error() string {
	what := "exited at start-up"
	if !e.Exited {
		what = "not ready in time"
	}
	return fmt.Sprintf("kroxylicious %s: %v; the end of its log:\n%s", what, e.Err, e.Log)
}

func (e *StartError) Unwrap() error { return e.Err }

// Start runs bin/kroxylicious-start.sh --config o.Config and returns once
// o.Ready answers ApiVersions; a proxy that exits first, or is not ready
// within o.Timeout, is a *StartError with the end of its log (and has been
// stopped).
func Start(ctx context.Context, o Options) (*Process, error) {
	script := filepath.Join(o.Home, "bin", "kroxylicious-start.sh")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("kroxylicious: %s: no release there (%v)", o.Home, err)
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	cmd := exec.Command(script, "--config", o.Config)
	cmd.Env = append(os.Environ(), "JAVA_OPTIONS="+o.JavaOptions)
	if o.JavaHome != "" {
		cmd.Env = append(cmd.Env, "JAVA_HOME="+o.JavaHome)
	}
	p := &Process{tail: &tailBuffer{max: 64 << 10}}
	var out io.Writer = p.tail
	if o.Log != nil {
		out = io.MultiWriter(p.tail, o.Log)
	}
	cmd.Stdout, cmd.Stderr = out, out
	var err error
	if p.proc, err = childproc.Start(cmd, false); err != nil {
		return nil, fmt.Errorf("kroxylicious: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var last error
	for {
		select {
		case <-p.proc.Done():
			err := p.proc.Err()
			if err == nil {
				err = errors.New("exit status 0")
			}
			return nil, &StartError{Exited: true, Err: err, Log: p.logEnd()}
		case <-ctx.Done():
			p.Stop()
			if last == nil {
				last = ctx.Err()
			}
			return nil, &StartError{Err: fmt.Errorf("no Kafka ApiVersions answer on %s within %s: %w", o.Ready, o.Timeout, last), Log: p.logEnd()}
		case <-time.After(200 * time.Millisecond):
		}
		if last = agent.KafkaReady(ctx, o.Ready, o.ReadyTLS); last == nil {
			return p, nil
		}
	}
}

// Pid is the proxy's process id (java's: the start script execs it).
func (p *Process) Pid() int { return p.proc.Pid() }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.proc.Done() }

// Tail is the last n lines of the proxy's output.
func (p *Process) Tail(n int) string { return lastLines(p.tail.String(), n) }

// stopGrace is how long Stop lets the proxy shut down after SIGTERM.
const stopGrace = 10 * time.Second

// Stop sends SIGTERM to the proxy's process group and SIGKILL after 10
// seconds; it returns once the process has exited.
func (p *Process) Stop() error {
	p.proc.Stop(stopGrace)
	return nil
}

// startErrorLines is how many lines of its log a StartError quotes.
const startErrorLines = 40

// logEnd is the end of the proxy's output for a StartError: its last
// lines without the frames of Java stack traces ("\tat ...", "\t... 2
// more"), so that the messages and the "Caused by:" lines of an exception,
// which say what went wrong, fit in the lines quoted.
func (p *Process) logEnd() string {
	var kept []string
	for _, l := range strings.Split(strings.TrimRight(p.tail.String(), "\n"), "\n") {
		if t := strings.TrimLeft(l, " \t"); t != l && (strings.HasPrefix(t, "at ") || strings.HasPrefix(t, "... ")) {
			continue
		}
		kept = append(kept, l)
	}
	return lastLines(strings.Join(kept, "\n"), startErrorLines)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Release is a Kroxylicious release unpacked on this machine.
type Release struct {
	// Home is the release's top directory (holding bin/ and libs/).
	Home string
	// Archive is the tarball it was unpacked from.
	Archive string
	release.KroxyliciousRelease
}

// Prepare makes the release of distribution (a tarball file on this
// machine or an http(s) URL) ready to run, in xp's cache as release.Cache
// keeps releases (cacheDir/kroxylicious): a URL downloaded once and
// checked against sha512 (hex) before it is kept; the tarball checked,
// found to hold Kroxylicious, and unpacked once, so a second call, or a
// second campaign, reuses it.
func Prepare(ctx context.Context, cacheDir, distribution, sha512 string) (Release, error) {
	var rel release.KroxyliciousRelease
	c, err := release.Cache(ctx, cacheDir, release.Fetch{Kind: "kroxylicious", Distribution: distribution, SHA512: strings.ToLower(sha512),
		SHA512Key: "gateway.kroxylicious.sha512",
		Inspect: func(archive string) (string, string, error) {
			var err error
			rel, err = release.InspectKroxylicious(archive)
			return rel.Top, "libs", err
		}})
	if err != nil {
		return Release{}, err
	}
	return Release{Home: c.Dir, Archive: c.Archive, KroxyliciousRelease: rel}, nil
}

var javaVersionRE = regexp.MustCompile(`version "([0-9]+)`)

// JavaHome finds a Java runtime of major version min or later: JAVA_HOME's,
// the java on PATH, or one under /usr/lib/jvm; it returns its home (for
// JAVA_HOME). None is an error saying what to install.
func JavaHome(min int) (string, error) {
	var cands []string
	if h := os.Getenv("JAVA_HOME"); h != "" {
		cands = append(cands, filepath.Join(h, "bin", "java"))
	}
	if j, err := exec.LookPath("java"); err == nil {
		cands = append(cands, j)
	}
	jvms, _ := filepath.Glob("/usr/lib/jvm/*/bin/java")
	cands = append(cands, jvms...)
	var seen []string
	for _, c := range cands {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		out, _ := exec.Command(real, "-version").CombinedOutput()
		m := javaVersionRE.FindSubmatch(out)
		if m == nil {
			continue
		}
		v, _ := strconv.Atoi(string(m[1]))
		if v >= min {
			return filepath.Dir(filepath.Dir(real)), nil
		}
		seen = append(seen, fmt.Sprintf("%s (Java %d)", real, v))
	}
	found := "none found"
	if len(seen) > 0 {
		found = "found only " + strings.Join(seen, ", ")
	}
	return "", fmt.Errorf("kroxylicious needs Java %d or later: %s; install one (apt-get install openjdk-%d-jre-headless) or set JAVA_HOME", min, found, min)
}
