package tlsrec

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Python's ssl module is OpenSSL, a TLS implementation independent of
// crypto/tls. It also lets the peer insist on TLS_AES_256_GCM_SHA384, which
// crypto/tls never prefers on machines with AES hardware: OpenSSL reads the
// suite list from the configuration file OPENSSL_CONF names.

const python = "/usr/bin/python3"

const opensslConf = `openssl_conf = openssl_init
[openssl_init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = system_default_sect
[system_default_sect]
MinProtocol = TLSv1.3
Ciphersuites = %s
`

// pyEchoServer serves one TLS connection on 127.0.0.1 and echoes what it
// reads until close_notify, then answers with its own.
const pyEchoServer = `
import socket, ssl, sys
cert, key = sys.argv[1], sys.argv[2]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
s.settimeout(60)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
c.settimeout(60)
t = ctx.wrap_socket(c, server_side=True)
print(t.cipher()[0], flush=True)
while True:
    d = t.recv(1 << 20)
    if not d:
        break
    t.sendall(d)
t.unwrap().close()
`

// pyEchoClient connects to 127.0.0.1:port, and for each size sends that
// many random bytes and expects them back.
const pyEchoClient = `
import os, socket, ssl, sys
port, ca = int(sys.argv[1]), sys.argv[2]
sizes = [int(x) for x in sys.argv[3].split(",")]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.load_verify_locations(ca)
t = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=60), server_hostname="localhost")
print(t.cipher()[0], flush=True)
for n in sizes:
    m = os.urandom(n)
    t.sendall(m)
    got = b""
    while len(got) < n:
        d = t.recv(n - len(got))
        if not d:
            sys.exit("EOF after %d of %d bytes" % (len(got), n))
        got += d
    if got != m:
        sys.exit("echo of %d bytes differs" % n)
t.unwrap().close()
print("ok", flush=True)
`

// pythonPeer starts a python script with the OpenSSL configuration that
// allows TLS 1.3 with only suite; the process dies with the test.
func pythonPeer(t *testing.T, suite, script string, args ...string) (*exec.Cmd, *bufio.Reader, *strings.Builder) {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "openssl.cnf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(opensslConf, suite)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	cmd := exec.CommandContext(ctx, python, append([]string{"-c", script}, args...)...)
	cmd.Env = append(os.Environ(), "OPENSSL_CONF="+conf)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", python, err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	return cmd, bufio.NewReader(out), stderr
}

func readLine(t *testing.T, r *bufio.Reader, stderr *strings.Builder) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("python: %v; stderr:\n%s", err, stderr)
	}
	return strings.TrimSpace(line)
}

// clientToPython starts a Python (OpenSSL) echo server offering only
// suite and connects our client to it; the connection closes with the test.
func clientToPython(t *testing.T, suite string) (net.Conn, *exec.Cmd, *bufio.Reader, *strings.Builder) {
	t.Helper()
	a := authority(t)
	cert, key := certPaths(a, "server")
	cmd, out, stderr := pythonPeer(t, suite, pyEchoServer, cert, key)
	port := readLine(t, out, stderr)
	raw, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	raw.SetDeadline(time.Now().Add(testTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := Client(ctx, raw, clientConfig(t, false), Options{})
	if err != nil {
		t.Fatalf("handshake: %v; python stderr:\n%s", err, stderr)
	}
	return c, cmd, out, stderr
}

// Our client against OpenSSL's server with AES-256-GCM-SHA384, both
// directions at once, with KeyUpdates asked of OpenSSL on the way.
func TestOpenSSLServerAES256(t *testing.T) {
	c, cmd, out, stderr := clientToPython(t, "TLS_AES_256_GCM_SHA384")
	rc := mustOurs(t, c)
	if got := rc.ConnectionState().CipherSuite; got != tls.TLS_AES_256_GCM_SHA384 {
		t.Fatalf("suite %s, want TLS_AES_256_GCM_SHA384", tls.CipherSuiteName(got))
	}
	if got := readLine(t, out, stderr); got != "TLS_AES_256_GCM_SHA384" {
		t.Fatalf("python reports %s", got)
	}
	total := sum(testSizes)
	data := stream(3, total)
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		werr = writeMessages(rc, data, testSizes, updateAt(rc, true, 3, 6))
		if werr == nil {
			werr = rc.CloseWrite()
		}
	}()
	rerr := readExactly(rc, data)
	wg.Wait()
	if werr != nil || rerr != nil {
		t.Fatalf("write: %v; read: %v; python stderr:\n%s", werr, rerr, stderr)
	}
	if err := expectEOF(rc); err != nil {
		t.Error(err)
	}
	if rc.out.updates != 2 || rc.in.updates < 1 {
		t.Errorf("write key updates %d, read key updates %d; want 2 and OpenSSL's answer", rc.out.updates, rc.in.updates)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("python: %v; stderr:\n%s", err, stderr)
	}
}

// Our server against OpenSSL's client with AES-256-GCM-SHA384: message by
// message echo.
func TestOpenSSLClientAES256(t *testing.T) {
	a := authority(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sizes := []int{1, 100, 16383, 16384, 16385, 100 << 10}
	var list []string
	for _, s := range sizes {
		list = append(list, strconv.Itoa(s))
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd, out, stderr := pythonPeer(t, "TLS_AES_256_GCM_SHA384", pyEchoClient, port, a.CAPath(), strings.Join(list, ","))
	raw, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(testTimeout))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s, err := Server(ctx, raw, serverConfig(t, false), Options{})
	if err != nil {
		t.Fatalf("handshake: %v; python stderr:\n%s", err, stderr)
	}
	rs := mustOurs(t, s)
	if got := rs.ConnectionState().CipherSuite; got != tls.TLS_AES_256_GCM_SHA384 {
		t.Fatalf("suite %s, want TLS_AES_256_GCM_SHA384", tls.CipherSuiteName(got))
	}
	n, err := io.Copy(rs, rs) // echo until python's close_notify
	if err != nil || n != int64(sum(sizes)) {
		t.Errorf("echoed %d bytes, %v; want %d", n, err, sum(sizes))
	}
	rs.Close()
	if got := readLine(t, out, stderr); got != "TLS_AES_256_GCM_SHA384" {
		t.Fatalf("python reports %s", got)
	}
	if got := readLine(t, out, stderr); got != "ok" {
		t.Errorf("python: %s", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("python: %v; stderr:\n%s", err, stderr)
	}
}

// TLS 1.3 with ChaCha20-Poly1305 stays with crypto/tls, and works.
func TestOpenSSLChaCha20FallsBack(t *testing.T) {
	c, cmd, out, stderr := clientToPython(t, "TLS_CHACHA20_POLY1305_SHA256")
	tc, ok := c.(*tls.Conn)
	if !ok {
		t.Fatalf("got %T, want *tls.Conn", c)
	}
	if got := tc.ConnectionState().CipherSuite; got != tls.TLS_CHACHA20_POLY1305_SHA256 {
		t.Fatalf("suite %s", tls.CipherSuiteName(got))
	}
	readLine(t, out, stderr)
	sizes := []int{1, 16385, 100 << 10}
	data := stream(4, sum(sizes))
	werr := make(chan error, 1)
	go func() {
		err := writeMessages(tc, data, sizes, nil)
		if err == nil {
			err = tc.CloseWrite()
		}
		werr <- err
	}()
	if err := readExactly(tc, data); err != nil {
		t.Error(err)
	}
	if err := <-werr; err != nil {
		t.Error(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("python: %v; stderr:\n%s", err, stderr)
	}
}
