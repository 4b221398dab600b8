// Package kdc runs an MIT Kerberos KDC (Debian's krb5-kdc, krb5kdc) for a
// group of GSSAPI runs: its own realm, database, kdc.conf and krb5.conf in
// one directory, listening on 127.0.0.1 only, with principals and
// keytabs (0600) made by kadmin.local. Nothing of the machine's own
// Kerberos setup is read or changed: every tool runs with KRB5_CONFIG and
// KRB5_KDC_PROFILE pointing into the directory.
package kdc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/xp-bench/xp/internal/childproc"
)

// Options configure Start.
type Options struct {
	// Dir receives the realm's files: kdc.conf, krb5.conf, the database
	// and stash (principal/, .k5.<REALM>), kdc.log and keytabs. Required;
	// made 0700.
	Dir string
	// Realm is the realm's name; default XP.TEST.
	Realm string
	// Keep leaves the KDC running after this process exits.
	Keep bool
	// Listen is the IP address the KDC listens on and krb5.conf names;
	// default 127.0.0.1. A remote target's KDC listens on its host's
	// private address, for the brokers and load generators on others.
	Listen string
}

// KDC is a running key distribution centre.
type KDC struct {
	// Realm is the realm the KDC serves.
	Realm string
	// Krb5Conf is the path of a krb5.conf naming this KDC for Realm, as
	// clients need it (the JVM's -Djava.security.krb5.conf, gokrb5's
	// config), over TCP (udp_preference_limit 1).
	Krb5Conf string
	// Address is the KDC's host:port (Options.Listen).
	Address string
	dir     string
	env     []string
	proc    *childproc.Proc
}

// Tools are the programs Start needs (Debian: krb5-kdc, krb5-admin-server).
var Tools = []string{"krb5kdc", "kdb5_util", "kadmin.local"}

// Start creates the realm's database and starts krb5kdc on a free port
// of Options.Listen (loopback by default), returning once it accepts
// connections. A missing tool
// is an error naming the Debian packages.
func Start(ctx context.Context, o Options) (*KDC, error) {
	if o.Dir == "" {
		return nil, errors.New("kdc: no directory for the realm's files")
	}
	if o.Realm == "" {
		o.Realm = "XP.TEST"
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1"
	}
	if net.ParseIP(o.Listen) == nil {
		return nil, fmt.Errorf("kdc: listen address %q is not an IP address", o.Listen)
	}
	for _, t := range Tools {
		if _, err := lookPath(t); err != nil {
			return nil, fmt.Errorf("kdc: %s not found: install Debian's krb5-kdc and krb5-admin-server", t)
		}
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var lastErr error
	for try := 0; try < 3; try++ {
		k, err := start(ctx, dir, o)
		if err == nil {
			return k, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// lookPath finds a tool on PATH or in /usr/sbin, where Debian puts the
// KDC's programs.
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return exec.LookPath(filepath.Join("/usr/sbin", name))
}

func start(ctx context.Context, dir string, o Options) (*KDC, error) {
	port, err := freePort(o.Listen)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(o.Listen, strconv.Itoa(port))
	k := &KDC{Realm: o.Realm, Krb5Conf: filepath.Join(dir, "krb5.conf"), Address: addr, dir: dir}
	kdcConf := filepath.Join(dir, "kdc.conf")
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.Krb5Conf, "KRB5_KDC_PROFILE="+kdcConf)
	krb5 := fmt.Sprintf(`[libdefaults]
	default_realm = %[1]s
	dns_lookup_kdc = false
	dns_lookup_realm = false
	dns_canonicalize_hostname = false
	rdns = false
	udp_preference_limit = 1
	ticket_lifetime = 1h
	forwardable = false

[realms]
	%[1]s = {
		kdc = %[2]s
		admin_server = %[2]s
	}
`, o.Realm, addr)
	db := filepath.Join(dir, "principal")
	kdc := fmt.Sprintf(`[kdcdefaults]
	kdc_listen = %[7]s
	kdc_tcp_listen = %[7]s

[realms]
	%[1]s = {
		database_name = %[3]s
		key_stash_file = %[4]s
		acl_file = %[5]s
		max_life = 1h
		supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
	}

[logging]
	kdc = FILE:%[6]s
`, o.Realm, port, db, filepath.Join(dir, ".k5."+o.Realm), filepath.Join(dir, "kadm5.acl"), filepath.Join(dir, "kdc.log"), addr)
	for name, body := range map[string]string{"krb5.conf": krb5, "kdc.conf": kdc, "kadm5.acl": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		master := make([]byte, 24)
		rand.Read(master)
		// The master password is read from stdin, never a command line.
		if err := k.run(ctx, bytes.NewReader([]byte(hex.EncodeToString(master)+"\n"+hex.EncodeToString(master)+"\n")),
			"kdb5_util", "-r", o.Realm, "create", "-s"); err != nil {
			return nil, err
		}
	}
	bin, _ := lookPath("krb5kdc")
	cmd := exec.Command(bin, "-n", "-r", o.Realm)
	cmd.Env = k.env
	log, err := os.OpenFile(filepath.Join(dir, "krb5kdc.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if k.proc, err = childproc.Start(cmd, o.Keep); err != nil {
		return nil, fmt.Errorf("kdc: krb5kdc: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return k, nil
		}
		select {
		case <-k.proc.Done():
			out, _ := os.ReadFile(filepath.Join(dir, "krb5kdc.out"))
			return nil, fmt.Errorf("kdc: krb5kdc exited: %v: %s", k.proc.Err(), bytes.TrimSpace(out))
		case <-ctx.Done():
			k.proc.Kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			k.proc.Kill()
			return nil, fmt.Errorf("kdc: krb5kdc does not accept connections on %s after 30s", addr)
		}
	}
}

// freePort is a TCP port free on address ip now.
func freePort(ip string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (k *KDC) run(ctx context.Context, stdin *bytes.Reader, tool string, args ...string) error {
	bin, err := lookPath(tool)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = k.env
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kdc: %s %s: %w: %s", tool, args[len(args)-1], err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// Keytab creates principals (name or name/host, in the KDC's realm) with
// random keys and writes their keys to a keytab at path (0600), which it
// returns. A principal that exists gets new keys, so an older keytab of
// it no longer authenticates.
func (k *KDC) Keytab(ctx context.Context, path string, principals ...string) (string, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	for _, p := range principals {
		full := p + "@" + k.Realm
		if err := k.run(ctx, nil, "kadmin.local", "-r", k.Realm, "-q", "addprinc -randkey "+full); err != nil {
			return "", err
		}
		if err := k.run(ctx, nil, "kadmin.local", "-r", k.Realm, "-q", "ktadd -k "+path+" "+full); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// Close stops the KDC.
func (k *KDC) Close() {
	if k.proc != nil {
		k.proc.Stop(5 * time.Second)
	}
}
