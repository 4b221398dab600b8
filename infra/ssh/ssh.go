// Package ssh runs commands on and uploads files to remote hosts over SSH
// (golang.org/x/crypto/ssh): key-file or agent authentication, host keys
// checked against one known_hosts file per campaign, one connection per
// host reused by every caller, bounded retries only for transient dial
// failures, and a time limit on every operation.
//
// Commands are logged; secrets never go in a command line. They travel on a
// command's standard input (WriteFile, RunOpts.Stdin) and land in files of
// mode 0600.
package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// HostKeyPolicy says what to do with a host key that known_hosts does not
// hold (OpenSSH's StrictHostKeyChecking).
type HostKeyPolicy string

const (
	// AcceptNew records the key of a host seen for the first time and
	// refuses a host whose key differs from the recorded one
	// (StrictHostKeyChecking=accept-new).
	AcceptNew HostKeyPolicy = "accept-new"
	// Strict refuses any host whose key is not already recorded
	// (StrictHostKeyChecking=yes).
	Strict HostKeyPolicy = "strict"
)

// ParsePolicy accepts "accept-new" and "strict"; "" means AcceptNew.
func ParsePolicy(s string) (HostKeyPolicy, error) {
	switch HostKeyPolicy(s) {
	case "", AcceptNew:
		return AcceptNew, nil
	case Strict:
		return Strict, nil
	}
	return "", fmt.Errorf("known_hosts policy %q: want accept-new or strict", s)
}

// Config says how to reach hosts. Zero durations take their defaults.
type Config struct {
	// User is the remote login name.
	User string
	// PrivateKey is the path of an unencrypted private key file in OpenSSH
	// or PEM format. Empty means use the agent.
	PrivateKey string
	// AgentSocket is the ssh-agent socket used when PrivateKey is empty;
	// default $SSH_AUTH_SOCK.
	AgentSocket string
	// KnownHosts is the campaign's known_hosts file; created (0600) when
	// missing.
	KnownHosts string
	// Policy for hosts not in KnownHosts; default AcceptNew.
	Policy HostKeyPolicy
	// DialTimeout bounds one TCP connect plus SSH handshake; default 15s.
	DialTimeout time.Duration
	// Retries is how many times a transient dial failure (connection
	// refused or reset, a timeout, no route: as while a machine boots or
	// its link comes back) is retried; default 5. Negative means none.
	// After an apply, Wait retries for a time rather than a count.
	Retries int
	// Backoff is the first wait between dial attempts, doubled each time up
	// to 8 times; default 500ms.
	Backoff time.Duration
	// CommandTimeout bounds a command that has no deadline in its context;
	// default 5 minutes.
	CommandTimeout time.Duration
	// KeepaliveInterval is how often each connection asks its host for an
	// answer (keepalive@openssh.com, as OpenSSH's ServerAliveInterval);
	// default 5s. A connection whose host leaves one unanswered for
	// KeepaliveCountMax intervals (default 3, as ServerAliveCountMax) is
	// closed: its commands fail at once instead of waiting on a dead link
	// for TCP's retransmission timeout, and the next Client call dials
	// again.
	KeepaliveInterval time.Duration
	KeepaliveCountMax int
	// MaxOutput bounds what Client.Output keeps of a command's standard
	// output; a command that writes more is stopped and its call fails
	// with an *OutputLimitError. Default 16 MiB.
	MaxOutput int
	// Log receives each command line and, unless a call gives its own
	// writers, each command's output (the campaign log). Nil discards.
	Log io.Writer
}

func (c *Config) setDefaults() error {
	if c.User == "" {
		return errors.New("ssh: no user")
	}
	if c.KnownHosts == "" {
		return errors.New("ssh: no known_hosts file")
	}
	p, err := ParsePolicy(string(c.Policy))
	if err != nil {
		return fmt.Errorf("ssh: %w", err)
	}
	c.Policy = p
	if c.DialTimeout <= 0 {
		c.DialTimeout = 15 * time.Second
	}
	if c.Retries == 0 {
		c.Retries = 5
	}
	if c.Retries < 0 {
		c.Retries = 0
	}
	if c.Backoff <= 0 {
		c.Backoff = 500 * time.Millisecond
	}
	if c.CommandTimeout <= 0 {
		c.CommandTimeout = 5 * time.Minute
	}
	if c.KeepaliveInterval <= 0 {
		c.KeepaliveInterval = 5 * time.Second
	}
	if c.KeepaliveCountMax <= 0 {
		c.KeepaliveCountMax = 3
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = 16 << 20
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// Pool holds one connection per host, made on first use and reused.
type Pool struct {
	cfg   Config
	auth  []xssh.AuthMethod
	hosts *knownHosts
	// closers release the agent connection.
	closers []io.Closer

	mu      sync.Mutex
	clients map[string]*Client
	dialing map[string]*sync.Mutex
}

// NewPool checks cfg and prepares authentication; it connects to nothing.
func NewPool(cfg Config) (*Pool, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	p := &Pool{cfg: cfg, clients: map[string]*Client{}, dialing: map[string]*sync.Mutex{}}
	kh, err := openKnownHosts(cfg.KnownHosts, cfg.Policy)
	if err != nil {
		return nil, err
	}
	p.hosts = kh
	if cfg.PrivateKey != "" {
		b, err := os.ReadFile(cfg.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("ssh private_key: %w", err)
		}
		signer, err := xssh.ParsePrivateKey(b)
		if err != nil {
			var pp *xssh.PassphraseMissingError
			if errors.As(err, &pp) {
				return nil, fmt.Errorf("ssh private_key %s is protected by a passphrase: load it into ssh-agent and leave private_key empty", cfg.PrivateKey)
			}
			return nil, fmt.Errorf("ssh private_key %s: %w", cfg.PrivateKey, err)
		}
		p.auth = []xssh.AuthMethod{xssh.PublicKeys(signer)}
		return p, nil
	}
	sock := cfg.AgentSocket
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	if sock == "" {
		return nil, errors.New("ssh: no private_key given and no agent (SSH_AUTH_SOCK is empty): set ssh.private_key in the target file or start ssh-agent")
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("ssh agent %s: %w", sock, err)
	}
	p.closers = append(p.closers, conn)
	p.auth = []xssh.AuthMethod{xssh.PublicKeysCallback(agent.NewClient(conn).Signers)}
	return p, nil
}

// Client returns the connection to addr (host:port, or host for port 22),
// dialling it on first use or after it broke.
func (p *Pool) Client(ctx context.Context, addr string) (*Client, error) {
	return p.client(ctx, addr, p.cfg.Retries)
}

// client is Client retrying a transient dial failure retries times.
func (p *Pool) client(ctx context.Context, addr string, retries int) (*Client, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "22")
	}
	p.mu.Lock()
	dl := p.dialing[addr]
	if dl == nil {
		dl = &sync.Mutex{}
		p.dialing[addr] = dl
	}
	p.mu.Unlock()
	// One dial per host at a time: concurrent callers share its result.
	dl.Lock()
	defer dl.Unlock()
	p.mu.Lock()
	c := p.clients[addr]
	p.mu.Unlock()
	if c != nil && c.alive() {
		return c, nil
	}
	sc, err := p.dial(ctx, addr, retries)
	if err != nil {
		return nil, err
	}
	c = &Client{addr: addr, pool: p, c: sc, done: make(chan struct{})}
	go func() { sc.Wait(); close(c.done) }()
	go p.keepalive(c)
	p.mu.Lock()
	p.clients[addr] = c
	p.mu.Unlock()
	return c, nil
}

// keepalive asks c's host for an answer every KeepaliveInterval and closes
// the connection once one has been outstanding for KeepaliveCountMax
// intervals (a host whose link went down). It ends with the connection.
func (p *Pool) keepalive(c *Client) {
	every := p.cfg.KeepaliveInterval
	limit := every * time.Duration(p.cfg.KeepaliveCountMax)
	t := time.NewTicker(every)
	defer t.Stop()
	answered := make(chan struct{}, 1)
	var asked time.Time // when the outstanding request was sent; zero if none
	for {
		select {
		case <-c.done:
			return
		case <-answered:
			asked = time.Time{}
		case now := <-t.C:
			if !asked.IsZero() {
				if now.Sub(asked) >= limit {
					fmt.Fprintf(p.cfg.Log, "ssh %s: no answer to keepalives for %v; closing the connection\n", c.addr, now.Sub(asked).Round(time.Second))
					c.c.Close()
					return
				}
				continue
			}
			asked = now
			go func() {
				// Any reply, even a refusal of the request, is an answer;
				// an error means the connection is gone.
				if _, _, err := c.c.SendRequest("keepalive@openssh.com", true, nil); err == nil {
					answered <- struct{}{}
				}
			}()
		}
	}
}

// Forget closes and drops the connection to addr, so the next Client call
// dials again (after a host's key was replaced, say).
func (p *Pool) Forget(addr string) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "22")
	}
	p.mu.Lock()
	c := p.clients[addr]
	delete(p.clients, addr)
	p.mu.Unlock()
	if c != nil {
		c.c.Close()
	}
}

// Close closes every connection.
func (p *Pool) Close() error {
	p.mu.Lock()
	cs := p.clients
	p.clients = map[string]*Client{}
	p.mu.Unlock()
	var errs []error
	for _, c := range cs {
		if err := c.c.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, c := range p.closers {
		c.Close()
	}
	return errors.Join(errs...)
}

func (p *Pool) dial(ctx context.Context, addr string, retries int) (*xssh.Client, error) {
	wait := p.cfg.Backoff
	for attempt := 0; ; attempt++ {
		c, err := p.dialOnce(ctx, addr)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ssh %s: %w", addr, err)
		}
		if !transient(err) || attempt >= retries {
			if attempt > 0 {
				return nil, fmt.Errorf("ssh %s (after %d attempts): %w", addr, attempt+1, err)
			}
			return nil, fmt.Errorf("ssh %s: %w", addr, err)
		}
		fmt.Fprintf(p.cfg.Log, "ssh %s: %v; retrying in %v\n", addr, err, wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("ssh %s: %w (last error: %v)", addr, ctx.Err(), err)
		case <-t.C:
		}
		if wait < 8*p.cfg.Backoff {
			wait *= 2
		}
	}
}

// dialOnce connects to addr and makes the SSH handshake, both within
// DialTimeout. One deadline bounds both: the connect's context, then the
// same instant as the socket's deadline, which ends a handshake with a
// silent server as an i/o timeout (a transient error, retried). Only the
// caller's ctx closes the socket early; a cancelled ctx is not retried.
func (p *Pool) dialOnce(ctx context.Context, addr string) (*xssh.Client, error) {
	deadline := time.Now().Add(p.cfg.DialTimeout)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	cfg := &xssh.ClientConfig{
		User:            p.cfg.User,
		Auth:            p.auth,
		HostKeyCallback: p.hosts.callback,
	}
	if algs := p.hosts.algorithms(addr); len(algs) > 0 {
		cfg.HostKeyAlgorithms = algs
	}
	sc, chans, reqs, err := xssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (during the handshake: %v)", ctx.Err(), err)
		}
		if !time.Now().Before(deadline) {
			return nil, &handshakeTimeout{after: p.cfg.DialTimeout, err: err}
		}
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return xssh.NewClient(sc, chans, reqs), nil
}

// handshakeTimeout is an SSH handshake that did not finish within
// DialTimeout: a host whose sshd is not answering yet (booting, or
// overloaded), as transient as a connect that timed out.
type handshakeTimeout struct {
	after time.Duration
	err   error
}

func (e *handshakeTimeout) Error() string {
	return fmt.Sprintf("handshake timed out after %v: %v", e.after, e.err)
}
func (e *handshakeTimeout) Unwrap() error { return e.err }
func (e *handshakeTimeout) Timeout() bool { return true }

// transient reports whether a dial error is worth retrying: the host is
// not (yet) accepting, as while it boots (no answer at all until its
// network is up: a timeout) or sshd restarts (refused, reset).
func transient(err error) bool {
	var he *HostKeyError
	if errors.As(err, &he) {
		return false
	}
	var ht *handshakeTimeout
	if errors.As(err, &ht) {
		return true
	}
	var ne net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne) && ne.Timeout()
}

// portOf returns the port of host:port as a number.
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
