// Package netnstest makes remote hosts for tests out of Linux network
// namespaces: a bridge in the root namespace, and per host a namespace with
// a veth into the bridge, its own address in 198.18.0.0/15 (the RFC 2544
// benchmarking range) and its own sshd (Debian's openssh-server) with a
// generated host key, accepting a generated user key. Everything is removed
// when the test ends, also when it fails.
//
// The hosts share this machine's file system and users; only the network
// is theirs, and its name service: each host's /etc/hosts names every host
// of the net, and its resolver has no name server, so a lookup the files
// do not answer fails at once (a JVM's reverse lookup of a peer's address
// never waits for a name server the namespace cannot reach). These are
// the files of /etc/netns/NAMESPACE/, which `ip netns exec` mounts over
// /etc's, removed with the namespace. It needs root (CAP_NET_ADMIN) and /usr/sbin/sshd; when either
// is missing the test fails and says so.
package netnstest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"
)

// Sshd is Debian's OpenSSH server binary.
const Sshd = "/usr/sbin/sshd"

// Net is a bridge and the hosts on it.
type Net struct {
	t      testing.TB
	dir    string
	Bridge string
	// Gateway is the bridge's address in the root namespace.
	Gateway string
	// Prefix is the /24 the hosts live in, e.g. "198.18.3".
	Prefix string
	Hosts  []*Host
	// User is the login name the hosts accept (the user running the test).
	User string
	// UserKey is the path of the user's private key (OpenSSH format, 0600).
	UserKey string
	// UserPublicKey is the user's public key.
	UserPublicKey xssh.PublicKey
	// UserSigner signs with the user's key.
	UserSigner xssh.Signer
	home       string
}

// Host is one namespace with its sshd.
type Host struct {
	n    *Net
	Name string
	// NS is the network namespace's name (ip netns).
	NS string
	// Addr is the host's address on the bridge.
	Addr string
	// SSHPort is the port its sshd listens on.
	SSHPort int
	// HostKey is the public host key sshd offers.
	HostKey xssh.PublicKey
	veth    string
	dir     string
	sshd    *exec.Cmd
	sshdErr *bytes.Buffer
}

// SSHAddr is host:port of the host's sshd.
func (h *Host) SSHAddr() string { return net.JoinHostPort(h.Addr, strconv.Itoa(h.SSHPort)) }

// Dir is a directory private to this host, on the shared file system.
func (h *Host) Dir() string { return h.dir }

// Home is the directory the host's logins see as the user's home: a
// directory of Dir, mounted over the home directory in sshd's mount
// namespace.
func (h *Host) Home() string { return h.home() }

func (h *Host) home() string { return filepath.Join(h.dir, "home") }

// New makes a bridge and n hosts named host0.. and starts their sshds. The
// test fails at once, saying why, if any step cannot be done.
func New(t testing.TB, n int) *Net {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("netnstest: network namespaces need root (CAP_NET_ADMIN); run the tests as root")
	}
	for _, bin := range []string{"ip", Sshd} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("netnstest: %s not found: install iproute2 and openssh-server (apt-get install iproute2 openssh-server)", bin)
		}
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	tag := randHex(3)
	nt := &Net{t: t, dir: t.TempDir(), Bridge: "xpbr" + tag, User: u.Username, home: u.HomeDir}
	t.Cleanup(nt.cleanup)
	unlock := lockRanges(t)
	prefix, err := freePrefix()
	if err != nil {
		unlock()
		t.Fatalf("netnstest: %v", err)
	}
	nt.Prefix = prefix
	nt.Gateway = prefix + ".1"
	err = nt.makeBridge()
	unlock()
	if err != nil {
		t.Fatalf("netnstest: bridge %s: %v", nt.Bridge, err)
	}
	if err := nt.makeUserKey(); err != nil {
		t.Fatalf("netnstest: user key: %v", err)
	}
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatalf("netnstest: sshd privilege separation directory: %v", err)
	}
	for i := 0; i < n; i++ {
		h := &Host{n: nt, Name: fmt.Sprintf("host%d", i), NS: fmt.Sprintf("xp%s-%d", tag, i),
			Addr: fmt.Sprintf("%s.%d", prefix, 10+i), SSHPort: 22, veth: fmt.Sprintf("xpv%s%d", tag, i)}
		h.dir = filepath.Join(nt.dir, h.Name)
		if err := os.MkdirAll(h.home(), 0o700); err != nil {
			t.Fatalf("netnstest: %v", err)
		}
		nt.Hosts = append(nt.Hosts, h)
		if err := h.writeEtc(n); err != nil {
			t.Fatalf("netnstest: host %s: %v", h.Name, err)
		}
		if err := h.makeNamespace(); err != nil {
			t.Fatalf("netnstest: host %s (namespace %s): %v", h.Name, h.NS, err)
		}
		if err := h.newHostKey(); err != nil {
			t.Fatalf("netnstest: host %s: %v", h.Name, err)
		}
		if err := h.StartSSHD(); err != nil {
			t.Fatalf("netnstest: host %s: %v", h.Name, err)
		}
	}
	return nt
}

func (n *Net) makeBridge() error {
	steps := [][]string{
		{"link", "add", n.Bridge, "type", "bridge"},
		{"addr", "add", n.Gateway + "/24", "dev", n.Bridge},
		{"link", "set", n.Bridge, "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// etcDir is where `ip netns exec` finds the files it mounts over /etc's
// in the host's namespace.
func (h *Host) etcDir() string { return filepath.Join("/etc/netns", h.NS) }

// writeEtc writes the host's hosts file, naming each of the n hosts of the
// net by its address, and a resolv.conf whose only name server is the
// namespace's own loopback, where none listens: a lookup that is not in
// the hosts file is refused at once.
func (h *Host) writeEtc(n int) error {
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&hosts, "%s.%d\thost%d\n", h.n.Prefix, 10+i, i)
	}
	if err := os.MkdirAll(h.etcDir(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.etcDir(), "hosts"), []byte(hosts.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(h.etcDir(), "resolv.conf"), []byte("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"), 0o644)
}

func (h *Host) makeNamespace() error {
	peer := h.veth + "p"
	steps := [][]string{
		{"netns", "add", h.NS},
		{"link", "add", h.veth, "type", "veth", "peer", "name", peer},
		{"link", "set", h.veth, "master", h.n.Bridge},
		{"link", "set", h.veth, "up"},
		{"link", "set", peer, "netns", h.NS},
		{"-n", h.NS, "link", "set", "lo", "up"},
		{"-n", h.NS, "link", "set", peer, "name", "eth0"},
		{"-n", h.NS, "addr", "add", h.Addr + "/24", "dev", "eth0"},
		{"-n", h.NS, "link", "set", "eth0", "up"},
		{"-n", h.NS, "route", "add", "default", "via", h.n.Gateway},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	return nil
}

// LinkDown takes the host's link to the bridge down: it drops off the
// network, its processes keep running.
func (h *Host) LinkDown() error { return ip("link", "set", h.veth, "down") }

// LinkUp brings the link back.
func (h *Host) LinkUp() error { return ip("link", "set", h.veth, "up") }

// Silence makes the host answer nothing to the root namespace: packets
// from the bridge's address reach it, but every reply to that address is
// dropped (a blackhole route), so a connection from there times out
// instead of being refused, as to a machine that is still booting.
func (h *Host) Silence() error {
	return ip("-n", h.NS, "route", "add", "blackhole", h.n.Gateway+"/32")
}

// Unsilence undoes Silence.
func (h *Host) Unsilence() error {
	return ip("-n", h.NS, "route", "del", "blackhole", h.n.Gateway+"/32")
}

// Command returns a command that runs inside the host's namespace.
func (h *Host) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// Pids lists the processes running in the host's namespace.
func (h *Host) Pids() ([]int, error) {
	out, err := exec.Command("ip", "netns", "pids", h.NS).Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns pids %s: %w", h.NS, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids, nil
}

// Processes lists the command names (/proc/PID/comm) of the processes in
// the host's namespace other than its sshd.
func (h *Host) Processes() ([]string, error) {
	pids, err := h.Pids()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pids {
		if h.sshd != nil && h.sshd.Process != nil && p == h.sshd.Process.Pid {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if err != nil {
			continue // exited meanwhile
		}
		names = append(names, strings.TrimSpace(string(b)))
	}
	return names, nil
}

// newHostKey generates a fresh ed25519 host key for the host's sshd.
func (h *Host) newHostKey() error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	blk, err := xssh.MarshalPrivateKey(priv, h.Name)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.dir, "ssh_host_ed25519_key"), pem.EncodeToMemory(blk), 0o600); err != nil {
		return err
	}
	h.HostKey, err = xssh.NewPublicKey(pub)
	return err
}

// ChangeHostKey restarts the host's sshd with a new host key, as a
// reinstalled machine (or an impostor) would present.
func (h *Host) ChangeHostKey() error {
	if err := h.StopSSHD(); err != nil {
		return err
	}
	if err := h.newHostKey(); err != nil {
		return err
	}
	return h.StartSSHD()
}

// StartSSHD starts the host's sshd and waits until it accepts connections.
func (h *Host) StartSSHD() error {
	cfg := filepath.Join(h.dir, "sshd_config")
	auth := filepath.Join(h.n.dir, "authorized_keys")
	text := strings.Join([]string{
		"ListenAddress " + h.SSHAddr(),
		"HostKey " + filepath.Join(h.dir, "ssh_host_ed25519_key"),
		"PidFile " + filepath.Join(h.dir, "sshd.pid"),
		"AuthorizedKeysFile " + auth,
		// The key files live in the test's temp dir, not a home directory.
		"StrictModes no",
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"AllowUsers " + h.n.User,
		"PrintMotd no",
		"LogLevel ERROR",
		"",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return err
	}
	// sshd runs in a mount namespace of its own in which the user's home
	// directory is one private to this host: hosts do not see each other's
	// files there, and a login runs none of this machine's shell start-up
	// files.
	script := fmt.Sprintf("mount --bind %s %s && exec %s -D -e -f %s", h.home(), h.n.home, Sshd, cfg)
	cmd := exec.Command("ip", "netns", "exec", h.NS, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	h.sshdErr = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = h.sshdErr, h.sshdErr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd: %w", err)
	}
	h.sshd = cmd
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", h.SSHAddr(), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("sshd exited at start: %s", strings.TrimSpace(h.sshdErr.String()))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd on %s not accepting after 10s: %v; its output: %s", h.SSHAddr(), err, h.sshdErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StopSSHD stops the host's sshd (sessions it forked keep running).
func (h *Host) StopSSHD() error {
	if h.sshd == nil || h.sshd.Process == nil {
		return nil
	}
	syscall.Kill(-h.sshd.Process.Pid, syscall.SIGKILL)
	h.sshd = nil
	// Wait until the port is free again so a restart can bind it.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", h.SSHAddr(), 200*time.Millisecond)
		if err != nil {
			return nil
		}
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("sshd on %s still accepting after being killed", h.SSHAddr())
}

func (n *Net) makeUserKey() error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	blk, err := xssh.MarshalPrivateKey(priv, "xp-test-user")
	if err != nil {
		return err
	}
	n.UserKey = filepath.Join(n.dir, "id_ed25519")
	if err := os.WriteFile(n.UserKey, pem.EncodeToMemory(blk), 0o600); err != nil {
		return err
	}
	if n.UserPublicKey, err = xssh.NewPublicKey(pub); err != nil {
		return err
	}
	if n.UserSigner, err = xssh.NewSignerFromKey(priv); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.dir, "authorized_keys"), xssh.MarshalAuthorizedKey(n.UserPublicKey), 0o600)
}

// KnownHostsLines returns known_hosts lines for every host's current key.
func (n *Net) KnownHostsLines() string {
	var b strings.Builder
	for _, h := range n.Hosts {
		addr := h.Addr
		if h.SSHPort != 22 {
			addr = h.SSHAddr()
		}
		fmt.Fprintf(&b, "%s %s", addr, xssh.MarshalAuthorizedKey(h.HostKey))
	}
	return b.String()
}

// cleanup kills every process in every namespace, then removes the
// namespaces (their veths go with them) and the bridge.
func (n *Net) cleanup() {
	var errs []error
	for _, h := range n.Hosts {
		if h.sshd != nil && h.sshd.Process != nil {
			syscall.Kill(-h.sshd.Process.Pid, syscall.SIGKILL)
		}
		if err := h.killAll(); err != nil {
			errs = append(errs, err)
		}
		if err := ip("netns", "del", h.NS); err != nil && !strings.Contains(err.Error(), "No such file") {
			errs = append(errs, err)
		}
		ip("link", "del", h.veth) // gone with the namespace unless moving it failed
		if err := os.RemoveAll(h.etcDir()); err != nil {
			errs = append(errs, err)
		}
	}
	if err := ip("link", "del", n.Bridge); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		n.t.Errorf("netnstest cleanup: %v", err)
	}
}

// killAll SIGKILLs every process in the namespace until none is left.
func (h *Host) killAll() error {
	for i := 0; i < 50; i++ {
		pids, err := h.Pids()
		if err != nil {
			return nil // namespace never made
		}
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("namespace %s: processes still running after SIGKILL", h.NS)
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// lockRanges serialises the choice of a /24 among tests running at once on
// this machine (other packages' test binaries included).
func lockRanges(t testing.TB) func() {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "xp-netnstest.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("netnstest: lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("netnstest: lock: %v", err)
	}
	return func() { f.Close() }
}

// freePrefix returns the first /24 of 198.18.0.0/15 no interface of the
// root namespace has an address in.
func freePrefix() (string, error) {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		return "", fmt.Errorf("ip addr show: %w", err)
	}
	used := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for i, w := range f {
			if w == "inet" && i+1 < len(f) {
				a, _, _ := strings.Cut(f[i+1], "/")
				if j := strings.LastIndexByte(a, '.'); j > 0 {
					used[a[:j]] = true
				}
			}
		}
	}
	for _, second := range []int{18, 19} {
		for third := 0; third < 256; third++ {
			p := fmt.Sprintf("198.%d.%d", second, third)
			if !used[p] {
				return p, nil
			}
		}
	}
	return "", errors.New("every /24 of 198.18.0.0/15 is in use on this machine")
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
