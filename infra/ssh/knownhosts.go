package ssh

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/xp-bench/xp/internal/durable"
)

// HostKeyError is a host key refused: Changed when known_hosts holds a
// different key for the host (a reinstalled machine, or someone in the
// middle), otherwise the host is unknown and the policy is Strict.
type HostKeyError struct {
	Host        string
	KnownHosts  string
	Changed     bool
	Fingerprint string // SHA256 fingerprint of the key the host offered
	Line        int    // line of the recorded key when Changed
}

func (e *HostKeyError) Error() string {
	if e.Changed {
		return fmt.Sprintf("host key of %s has CHANGED: it now offers %s but %s:%d records another key, seen earlier in this "+
			"infrastructure group; someone may be intercepting the connection, so xp does not connect. A machine of a "+
			"group keeps its key; if it was really rebuilt, take the group down (xp infra down) and apply it again",
			e.Host, e.Fingerprint, e.KnownHosts, e.Line)
	}
	return fmt.Sprintf("host key of %s (%s) is not in %s and the known_hosts policy is strict: "+
		"add the host's key to that file, or use known_hosts: accept-new", e.Host, e.Fingerprint, e.KnownHosts)
}

// knownHosts checks host keys against one file and, under AcceptNew,
// appends keys of hosts it has never seen.
type knownHosts struct {
	path   string
	policy HostKeyPolicy
	probe  xssh.PublicKey

	mu sync.Mutex
}

func openKnownHosts(path string, policy HostKeyPolicy) (*knownHosts, error) {
	// Created (empty) if missing, and on disk before any key is learnt.
	if err := durable.Append(path, nil, 0o600); err != nil {
		return nil, fmt.Errorf("ssh known_hosts: %w", err)
	}
	// A key no host has: checking it reveals which keys the file records
	// for a host without connecting.
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	probe, err := xssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return &knownHosts{path: path, policy: policy, probe: probe}, nil
}

func (k *knownHosts) callback(hostname string, remote net.Addr, key xssh.PublicKey) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	check, err := knownhosts.New(k.path)
	if err != nil {
		return fmt.Errorf("ssh known_hosts: %w", err)
	}
	err = check(hostname, remote, key)
	var ke *knownhosts.KeyError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &ke):
		return err
	case len(ke.Want) > 0:
		return &HostKeyError{Host: hostname, KnownHosts: k.path, Changed: true,
			Fingerprint: xssh.FingerprintSHA256(key), Line: ke.Want[0].Line}
	case k.policy == Strict:
		return &HostKeyError{Host: hostname, KnownHosts: k.path, Fingerprint: xssh.FingerprintSHA256(key)}
	}
	// On disk before the connection is used: a crash must not forget the
	// key a host was trusted with.
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
	if err := durable.Append(k.path, []byte(line), 0o600); err != nil {
		return fmt.Errorf("ssh known_hosts: recording %s: %w", hostname, err)
	}
	return nil
}

// algorithms returns the host key algorithms to ask addr for: those of the
// keys recorded for it, so a host with several keys is checked against the
// one we know rather than reported as changed. Nil when none is recorded.
func (k *knownHosts) algorithms(addr string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	check, err := knownhosts.New(k.path)
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if err := check(addr, tcpAddr(addr), k.probe); !errors.As(err, &ke) {
		return nil
	}
	var algs []string
	seen := map[string]bool{}
	for _, w := range ke.Want {
		for _, a := range algorithmsFor(w.Key.Type()) {
			if !seen[a] {
				seen[a] = true
				algs = append(algs, a)
			}
		}
	}
	return algs
}

func algorithmsFor(keyType string) []string {
	if keyType == xssh.KeyAlgoRSA {
		return []string{xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256, xssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

func tcpAddr(addr string) net.Addr {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &net.TCPAddr{}
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return &net.TCPAddr{IP: ip, Port: portOf(addr)}
}
