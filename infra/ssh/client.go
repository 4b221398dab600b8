package ssh

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	xssh "golang.org/x/crypto/ssh"
)

// Client is the connection to one host. It is safe for concurrent use: each
// command has its own SSH session over the shared connection.
type Client struct {
	addr string
	pool *Pool
	c    *xssh.Client
	done chan struct{}
}

// Addr is the host:port this client is connected to.
func (c *Client) Addr() string { return c.addr }

// DialContext opens a connection from the host to addr (a direct-tcpip
// channel: the host's sshd dials it), e.g. to an endpoint that listens on
// the host's loopback only.
func (c *Client) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := c.c.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: dial %s through ssh: %w", c.addr, addr, err)
	}
	return conn, nil
}

func (c *Client) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// RunOpts are the streams of one command. Nil Stdout and Stderr go to the
// pool's log.
type RunOpts struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Quiet leaves the command line out of the log (it is still never a
	// place for secrets: process lists show it on the host).
	Quiet bool
	// Stream runs a long-lived command (a telemetry stream) without the
	// pool's CommandTimeout: it ends with ctx, or with the connection
	// (whose keepalives detect a host that is gone).
	Stream bool
}

// ExitError is a remote command that ran and exited non-zero.
type ExitError struct {
	Host   string
	Cmd    string
	Status int
	// Stderr is the tail of the command's standard error, when it was
	// captured by the call (Output, Upload, WriteFile).
	Stderr string
}

func (e *ExitError) Error() string {
	s := fmt.Sprintf("%s: %q exited with status %d", e.Host, e.Cmd, e.Status)
	if e.Stderr != "" {
		s += ": " + e.Stderr
	}
	return s
}

// Run runs cmd through the remote user's shell and waits for it. Without a
// deadline in ctx, the pool's CommandTimeout applies (unless o.Stream);
// when ctx ends the command is sent SIGKILL and its session closed.
func (c *Client) Run(ctx context.Context, cmd string, o RunOpts) error {
	if _, ok := ctx.Deadline(); !ok && !o.Stream {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.pool.cfg.CommandTimeout)
		defer cancel()
	}
	log := c.pool.cfg.Log
	if !o.Quiet {
		fmt.Fprintf(log, "%s$ %s\n", c.addr, cmd)
	}
	stdout, stderr := o.Stdout, o.Stderr
	if stdout == nil {
		stdout = log
	}
	if stderr == nil {
		stderr = log
	}
	// Opening the session and starting the command wait for the host's
	// answers: they run beside the select so that a host that stopped
	// answering cannot hold Run past its deadline.
	started := make(chan *xssh.Session, 1)
	done := make(chan error, 1)
	go func() {
		s, err := c.c.NewSession()
		if err != nil {
			done <- fmt.Errorf("new session: %w", err)
			return
		}
		s.Stdin, s.Stdout, s.Stderr = o.Stdin, stdout, stderr
		if err := s.Start(cmd); err != nil {
			s.Close()
			done <- err
			return
		}
		started <- s
		err = s.Wait()
		s.Close()
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case s := <-started:
			// The session's close reaches the remote process as a
			// hang-up; the waiting goroutine ends when the host closes
			// the channel.
			s.Signal(xssh.SIGKILL)
			s.Close()
		default:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// The host has not even started the command by its
				// deadline: it does not answer. Drop the connection; the
				// pool dials anew next time.
				fmt.Fprintf(log, "ssh %s: no answer to %q before the deadline; dropping the connection\n", c.addr, cmd)
				c.c.Close()
				break
			}
			// Cancelled before the host started it: stop the command once
			// it starts. The connection stays, other sessions use it.
			go func() {
				select {
				case s := <-started:
					s.Signal(xssh.SIGKILL)
					s.Close()
				case <-done:
				}
			}()
		}
		return fmt.Errorf("ssh %s: %q: %w", c.addr, cmd, ctx.Err())
	}
	var ee *xssh.ExitError
	if errors.As(err, &ee) {
		return &ExitError{Host: c.addr, Cmd: cmd, Status: ee.ExitStatus()}
	}
	if err != nil {
		return fmt.Errorf("ssh %s: %q: %w", c.addr, cmd, err)
	}
	return nil
}

// Output runs cmd and returns its standard output; standard error goes to
// the log and, on failure, into the error. A command that writes more than
// the pool's MaxOutput is stopped, and the error is an *OutputLimitError
// naming it: Output is for answers and small files, not for streams.
func (c *Client) Output(ctx context.Context, cmd string) ([]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := &cappedBuffer{max: c.pool.cfg.MaxOutput, over: cancel}
	stderr := &tail{max: 2048}
	err := c.Run(ctx, cmd, RunOpts{Stdout: out, Stderr: io.MultiWriter(c.pool.cfg.Log, stderr)})
	if out.exceeded {
		return nil, &OutputLimitError{Host: c.addr, Cmd: cmd, Limit: out.max}
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		ee.Stderr = strings.TrimSpace(stderr.String())
	}
	return out.b.Bytes(), err
}

// OutputLimitError is a command whose standard output exceeded what
// Client.Output keeps (Config.MaxOutput); the command was stopped.
type OutputLimitError struct {
	Host  string
	Cmd   string
	Limit int
}

func (e *OutputLimitError) Error() string {
	return fmt.Sprintf("ssh %s: %q wrote more than %d bytes to its standard output, the most xp reads of a command's answer; "+
		"the command was stopped (fetch large files with a bounded read, e.g. tail -c)", e.Host, e.Cmd, e.Limit)
}

// cappedBuffer keeps up to max bytes; past that it keeps nothing more,
// marks itself exceeded and calls over (once), while still accepting
// writes so the session's copy never blocks the command's end.
type cappedBuffer struct {
	b        bytes.Buffer
	max      int
	exceeded bool
	over     func()
}

func (w *cappedBuffer) Write(p []byte) (int, error) {
	if w.exceeded {
		return len(p), nil
	}
	if w.b.Len()+len(p) > w.max {
		w.exceeded = true
		w.b.Reset()
		w.over()
		return len(p), nil
	}
	return w.b.Write(p)
}

// Upload copies the local file at src to dst on the host with the given
// mode, unless dst already holds the same bytes. The copy is streamed to a
// temporary file beside dst, its SHA-256 computed on the host and compared
// with the one of the bytes sent, and only then renamed into place.
// It returns whether anything was copied.
func (c *Client) Upload(ctx context.Context, src, dst string, mode os.FileMode) (bool, error) {
	f, err := os.Open(src)
	if err != nil {
		return false, fmt.Errorf("upload: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, fmt.Errorf("upload %s: %w", src, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if have, err := c.RemoteSHA256(ctx, dst); err == nil && have == sum {
		if err := c.Run(ctx, fmt.Sprintf("chmod %o %s", mode.Perm(), Quote(dst)), RunOpts{Quiet: true}); err != nil {
			return false, err
		}
		return false, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	return true, c.put(ctx, f, sum, dst, mode)
}

// WriteFile writes data to dst on the host with the given mode, verified
// like Upload. The bytes travel on standard input, so secrets written this
// way never appear in a command line; mode 0600 keeps them from other
// users.
func (c *Client) WriteFile(ctx context.Context, dst string, data []byte, mode os.FileMode) error {
	sum := sha256.Sum256(data)
	return c.put(ctx, bytes.NewReader(data), hex.EncodeToString(sum[:]), dst, mode)
}

func (c *Client) put(ctx context.Context, r io.Reader, sum, dst string, mode os.FileMode) error {
	tmp := dst + ".xp-upload"
	q, qt := Quote(dst), Quote(tmp)
	// umask 077 first: the file is private from its creation on, even if
	// the final mode is wider.
	cmd := fmt.Sprintf("umask 077 && mkdir -p -- \"$(dirname -- %s)\" && cat > %s && sha256sum -- %s", q, qt, qt)
	var out bytes.Buffer
	stderr := &tail{max: 2048}
	err := c.Run(ctx, cmd, RunOpts{Stdin: r, Stdout: &out, Stderr: stderr})
	if err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			ee.Stderr = strings.TrimSpace(stderr.String())
		}
		return fmt.Errorf("upload to %s:%s: %w", c.addr, dst, err)
	}
	got, _, _ := strings.Cut(strings.TrimSpace(out.String()), " ")
	if got != sum {
		c.Run(ctx, "rm -f -- "+qt, RunOpts{Quiet: true})
		return fmt.Errorf("upload to %s:%s: checksum mismatch: sent sha256 %s, host has %s", c.addr, dst, sum, got)
	}
	if _, err := c.Output(ctx, fmt.Sprintf("chmod %o %s && mv -f -- %s %s", mode.Perm(), qt, qt, q)); err != nil {
		return fmt.Errorf("upload to %s:%s: %w", c.addr, dst, err)
	}
	return nil
}

// RemoteSHA256 returns the hex SHA-256 of path on the host.
func (c *Client) RemoteSHA256(ctx context.Context, path string) (string, error) {
	var out bytes.Buffer
	err := c.Run(ctx, "sha256sum -- "+Quote(path), RunOpts{Stdout: &out, Stderr: io.Discard, Quiet: true})
	if err != nil {
		return "", err
	}
	sum, _, _ := strings.Cut(strings.TrimSpace(out.String()), " ")
	return sum, nil
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.b) }
