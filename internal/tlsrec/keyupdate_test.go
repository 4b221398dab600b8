package tlsrec

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// updateAt returns a between-messages hook that sends KeyUpdate(request)
// before the given message indexes.
func updateAt(c *Conn, request bool, at ...int) func(int) error {
	return func(i int) error {
		for _, a := range at {
			if a == i {
				return c.KeyUpdate(request)
			}
		}
		return nil
	}
}

// withGoPeer connects ours (server or client) to a crypto/tls peer.
func withGoPeer(t *testing.T, oursIsServer bool) (ours *Conn, peer net.Conn) {
	t.Helper()
	if oursIsServer {
		s, c := connect(t, oursServer(Options{}), serverConfig(t, false), goClient, clientConfig(t, false))
		return mustOurs(t, s), c
	}
	s, c := connect(t, goServer, serverConfig(t, false), oursClient(Options{}), clientConfig(t, false))
	return mustOurs(t, c), s
}

var sides = []struct {
	name      string
	oursIsSrv bool
}{{"ours client", false}, {"ours server", true}}

// Our KeyUpdate(true) to crypto/tls: crypto/tls reading our data under the
// new write keys proves the derivation, and our reading its data after its
// answering KeyUpdate proves the read side.
func TestKeyUpdateWithGoPeer(t *testing.T) {
	for _, side := range sides {
		t.Run(side.name, func(t *testing.T) {
			ours, peer := withGoPeer(t, side.oursIsSrv)
			exchange(t, ours, peer, testSizes, updateAt(ours, true, 3, 6), nil)
			// The peer answered after reading our updates; its data of a
			// second round follows its answers.
			exchange(t, ours, peer, []int{10, 20000}, nil, nil)
			if ours.out.updates != 2 {
				t.Errorf("write key updated %d times, want 2", ours.out.updates)
			}
			if ours.in.updates != 2 {
				t.Errorf("read key updated %d times, want 2 (crypto/tls answers each request)", ours.in.updates)
			}
		})
	}
}

func TestKeyUpdateBetweenOurs(t *testing.T) {
	s, c := connect(t, oursServer(Options{}), serverConfig(t, false), oursClient(Options{}), clientConfig(t, false))
	rs, rc := mustOurs(t, s), mustOurs(t, c)
	exchange(t, rs, rc, testSizes, updateAt(rs, true, 2, 5), updateAt(rc, true, 3, 7))
	exchange(t, rs, rc, []int{10, 20000}, updateAt(rs, false, 1), nil)
	for _, x := range []struct {
		name string
		c    *Conn
		own  int
	}{{"server", rs, 3}, {"client", rc, 2}} {
		if x.c.out.updates < x.own {
			t.Errorf("%s: write key updated %d times, want at least its own %d", x.name, x.c.out.updates, x.own)
		}
	}
	// Each side's reads followed every write key the other moved to.
	if rs.in.updates != rc.out.updates || rc.in.updates != rs.out.updates {
		t.Errorf("server in/out %d/%d, client in/out %d/%d", rs.in.updates, rs.out.updates, rc.in.updates, rc.out.updates)
	}
}

// The write key moves on by itself after keyUpdateAfter records.
func TestAutomaticKeyUpdate(t *testing.T) {
	for _, side := range sides {
		t.Run(side.name, func(t *testing.T) {
			ours, peer := withGoPeer(t, side.oursIsSrv)
			ours.keyUpdateAfter = 5
			exchange(t, ours, peer, testSizes, nil, nil)
			records := 0
			for _, s := range testSizes {
				records += (s + maxPlaintext - 1) / maxPlaintext
			}
			if want := records / 6; ours.out.updates < want {
				t.Errorf("%d records sent under %d keys, want at least %d", records, ours.out.updates+1, want+1)
			}
		})
	}
}

// A request that arrives while a Write holds the write side is answered
// before that side's next record, not by the reader waiting for the lock.
func TestKeyUpdateAnsweredByNextWrite(t *testing.T) {
	s, c := connect(t, oursServer(Options{}), serverConfig(t, false), oursClient(Options{}), clientConfig(t, false))
	rs, rc := mustOurs(t, s), mustOurs(t, c)
	if err := rs.KeyUpdate(true); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	rc.wmu.Lock() // as a Write in progress would
	buf := make([]byte, 10)
	n, err := rc.Read(buf)
	pending, updates := rc.pendingKeyUpdate.Load(), rc.out.updates
	rc.wmu.Unlock()
	if err != nil || string(buf[:n]) != "x" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if !pending || updates != 0 || rc.in.updates != 1 {
		t.Fatalf("pending %v, write updates %d, read updates %d; want true, 0, 1", pending, updates, rc.in.updates)
	}
	if _, err := rc.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	n, err = io.ReadFull(rs, buf[:1])
	if err != nil || !bytes.Equal(buf[:n], []byte("y")) {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if rc.out.updates != 1 || rs.in.updates != 1 || rc.pendingKeyUpdate.Load() {
		t.Errorf("client write updates %d, server read updates %d, pending %v; want 1, 1, false",
			rc.out.updates, rs.in.updates, rc.pendingKeyUpdate.Load())
	}
}
