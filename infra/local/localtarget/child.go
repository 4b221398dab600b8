package localtarget

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xp-bench/xp/infra/local"
)

// The local target serves the embedded cluster, and the gateways in front
// of it, from child processes of xp (the same executable, switched by
// childEnv): the load generator's CPU time and memory are then its own,
// and the gateways' CPU time is measured apart from the broker's.
//
// Protocol: the parent writes one JSON childSpec line on the child's
// stdin; the child answers one JSON childReply line on stdout, then serves
// until its stdin reaches end of file, which also happens when the parent
// dies, so a killed xp leaves no cluster behind.
const childEnv = "XP_LOCAL_TARGET_CHILD"

// Child roles.
const (
	roleCluster  = "cluster"
	roleGateways = "gateways"
)

type childSpec struct {
	Role    string `json:"role"`
	Brokers int    `json:"brokers,omitempty"`
	Dir     string `json:"dir,omitempty"`
	// Modes are the cluster's modes (role gateways).
	Modes    local.Modes    `json:"modes,omitempty"`
	Gateways []childGateway `json:"gateways,omitempty"`
}

// childGateway is local.GatewayModeOptions without the logger.
type childGateway struct {
	Name      string   `json:"name"`
	Security  string   `json:"security"`
	Transport string   `json:"transport,omitempty"`
	Encoding  string   `json:"encoding,omitempty"`
	Fields    []string `json:"fields,omitempty"`
	Cipher    string   `json:"cipher,omitempty"`
	SchemaDir string   `json:"schema_dir,omitempty"`
	Crypto    string   `json:"crypto,omitempty"`
	// TLS is the client leg's tls_version, tls_cipher and tls_key.
	TLS local.GatewayTLS `json:"tls,omitzero"`
}

type childReply struct {
	Dir   string      `json:"dir,omitempty"`
	Modes local.Modes `json:"modes,omitempty"`
	Error string      `json:"error,omitempty"`
}

// RunChildIfAsked serves as a local target child and exits when this
// process was started as one; otherwise it returns at once. Call it first
// in main, and in TestMain of test binaries whose tests run the local
// target.
func RunChildIfAsked() {
	if os.Getenv(childEnv) == "" {
		return
	}
	os.Exit(serveChild(os.Stdin, os.Stdout, os.Stderr))
}

// serveChild serves one spec read from stdin, replies on stdout, and logs
// on stderr (the parent keeps its tail for CollectLogs).
func serveChild(stdin io.Reader, stdout, stderr io.Writer) int {
	in := bufio.NewReader(stdin)
	reply := func(r childReply) {
		b, _ := json.Marshal(r)
		fmt.Fprintf(stdout, "%s\n", b)
	}
	line, err := in.ReadBytes('\n')
	if err != nil {
		reply(childReply{Error: "reading the spec: " + err.Error()})
		return 2
	}
	var spec childSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		reply(childReply{Error: "spec: " + err.Error()})
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	var c *local.Cluster
	switch spec.Role {
	case roleCluster:
		c, err = local.Start(ctx, local.Options{Brokers: spec.Brokers, Dir: spec.Dir})
	case roleGateways:
		c, err = local.Attach(spec.Dir, spec.Modes)
	default:
		err = fmt.Errorf("unknown role %q", spec.Role)
	}
	if err != nil {
		reply(childReply{Error: err.Error()})
		return 1
	}
	closers = append(closers, c.Close)
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	if spec.Role == roleCluster {
		logger.Info("embedded cluster serving", "brokers", spec.Brokers, "modes", len(c.Modes()), "dir", c.Dir())
	}
	for _, g := range spec.Gateways {
		gw, err := local.StartGatewayMode(ctx, c, local.GatewayModeOptions{Name: g.Name, Security: g.Security,
			Transport: g.Transport, Encoding: g.Encoding, Fields: g.Fields, Cipher: g.Cipher, SchemaDir: g.SchemaDir, Crypto: g.Crypto,
			TLS: g.TLS, Logger: logger})
		if err != nil {
			reply(childReply{Error: err.Error()})
			return 1
		}
		closers = append(closers, gw.Close)
	}
	reply(childReply{Dir: c.Dir(), Modes: c.Modes()})
	_, _ = io.Copy(io.Discard, in) // serve until the parent closes stdin or dies
	return 0
}

// childProc is a running local target child.
type childProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{}
	stderr *tailBuffer
}

// childStopTimeout is how long a child may take to close its listeners
// after its stdin closes before it is killed.
const childStopTimeout = 10 * time.Second

// startChild starts a child serving spec and returns it with its reply.
func startChild(ctx context.Context, spec childSpec) (*childProc, childReply, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, childReply{}, fmt.Errorf("local target: cannot find xp's executable to start the %s: %w", spec.Role, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	// A process group of its own: Ctrl-C in a terminal signals xp's whole
	// group, and a cluster killed under the run in flight would hold the
	// load generator until its timeouts. xp stops its children itself, by
	// closing their stdin.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, childReply{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, childReply{}, err
	}
	p := &childProc{cmd: cmd, stdin: stdin, done: make(chan struct{}), stderr: &tailBuffer{max: logTail}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, childReply{}, fmt.Errorf("local target: start the %s: %w", spec.Role, err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	b, _ := json.Marshal(spec)
	if _, err := fmt.Fprintf(stdin, "%s\n", b); err != nil {
		p.stop()
		return nil, childReply{}, fmt.Errorf("local target: %s: %w%s", spec.Role, err, p.stderr.suffix())
	}
	type result struct {
		r   childReply
		err error
	}
	got := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		var r childReply
		if err == nil {
			err = json.Unmarshal(line, &r)
		}
		got <- result{r, err}
	}()
	var res result
	select {
	case res = <-got:
	case <-ctx.Done():
		p.stop()
		return nil, childReply{}, ctx.Err()
	}
	if res.err == nil && res.r.Error != "" {
		res.err = errors.New(res.r.Error)
	}
	if res.err != nil {
		p.stop()
		return nil, childReply{}, fmt.Errorf("local target: %s: %w%s", spec.Role, res.err, p.stderr.suffix())
	}
	return p, res.r, nil
}

// stop closes the child's stdin and waits for it to end, killing it after
// childStopTimeout.
func (p *childProc) stop() error {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(childStopTimeout):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("local target: a child (pid %d) did not stop within %v and was killed", p.cmd.Process.Pid, childStopTimeout)
	}
	return nil
}

func (p *childProc) pid() int { return p.cmd.Process.Pid }

// logTail is how much of a child's stderr is kept for CollectLogs; error
// messages quote at most errorTail of it.
const (
	logTail   = 64 << 10
	errorTail = 2 << 10
)

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
		t.b = t.b[over:]
	}
	return len(p), nil
}

// bytes is a copy of what the buffer holds.
func (t *tailBuffer) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.b)
}

// suffix is the end of the child's stderr as a suffix for an error message.
func (t *tailBuffer) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > errorTail {
		b = b[len(b)-errorTail:]
	}
	s := strings.TrimSpace(string(bytes.ToValidUTF8(b, nil)))
	if s == "" {
		return ""
	}
	return "\n" + s
}
