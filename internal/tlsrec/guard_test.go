package tlsrec

import (
	"crypto/tls"
	"encoding/binary"
	"testing"
)

func TestSupportedRelease(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"go1.26", true},
		{"go1.26.8", true},
		{"go1.26rc1", false},
		{"go1.27.0", false},
		{"go1.2", false},
		{"go1.25.3", false},
		{"devel go1.27-abcdef", false},
	} {
		t.Run(tc.version, func(t *testing.T) {
			ok, why := supportedRelease(tc.version)
			if ok != tc.want {
				t.Fatalf("supportedRelease(%q) = %v (%s), want %v", tc.version, ok, why, tc.want)
			}
			if !ok && why == "" {
				t.Error("no reason given")
			}
		})
	}
}

// sealedRecord is a TLS 1.3 application_data record of content sealed by
// d at sequence number seq.
func sealedRecord(t *testing.T, d *direction, seq uint64, content []byte) []byte {
	t.Helper()
	inner := append(append([]byte(nil), content...), typeApplicationData)
	hdr := []byte{typeApplicationData, 3, 3, 0, 0}
	binary.BigEndian.PutUint16(hdr[3:], uint16(len(inner)+tagLen))
	nonce := d.iv
	for i := range 8 {
		nonce[nonceLen-1-i] ^= byte(seq >> (8 * i))
	}
	return d.aead.Seal(hdr, nonce[:], inner, hdr)
}

func testDirection(t *testing.T, secretByte byte) *direction {
	t.Helper()
	s, _ := suiteFor(tls.TLS_AES_128_GCM_SHA256)
	d := &direction{suite: s, newAEAD: defaultAEAD}
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = secretByte
	}
	if err := d.setSecret(secret); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSentUnder(t *testing.T) {
	app := testDirection(t, 1)
	other := testDirection(t, 2) // stands for the handshake keys
	flight := append(sealedRecord(t, other, 0, []byte("certificate")), sealedRecord(t, other, 1, []byte("finished"))...)
	ccs := []byte{20, 3, 3, 0, 1, 1}
	for _, tc := range []struct {
		name string
		sent []byte
		want bool
	}{
		{"nothing written", nil, false},
		{"handshake flight only", flight, false},
		{"change_cipher_spec and flight", append(append([]byte(nil), ccs...), flight...), false},
		{"later sequence number only", sealedRecord(t, app, 1, []byte("x")), false},
		{"ticket under the application key after the flight", append(append([]byte(nil), flight...), sealedRecord(t, app, 0, []byte("ticket"))...), true},
		{"application record first", sealedRecord(t, app, 0, nil), true},
		{"truncated header", flight[:3], true},
		{"truncated body", flight[:len(flight)-1], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sentUnder(app, tc.sent); got != tc.want {
				t.Errorf("sentUnder = %v, want %v", got, tc.want)
			}
		})
	}
}

// A server whose crypto/tls sends a session ticket in its last flight (under
// the application keys) must not be taken over: crypto/tls keeps the
// connection, OnKeep says why, and the data still flows.
func TestGuardKeepsConnectionWrittenUnderApplicationKeys(t *testing.T) {
	for _, tc := range []struct {
		name        string
		keepTickets bool
		wantReason  string
	}{
		{"tickets off (taken over)", false, ""},
		{"ticket sent under the application keys", true, KeepSentUnderKeys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reasons []string
			o := Options{OnKeep: func(r string) { reasons = append(reasons, r) }, keepTickets: tc.keepTickets}
			ccfg := clientConfig(t, false)
			// A client with a session cache asks for tickets.
			ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			s, c := connect(t, oursServer(o), serverConfig(t, false), goClient, ccfg)
			if tc.wantReason == "" {
				mustOurs(t, s)
				if len(reasons) != 0 {
					t.Errorf("OnKeep called: %q", reasons)
				}
			} else {
				if _, ok := s.(*tls.Conn); !ok {
					t.Fatalf("server got %T, want crypto/tls to keep it", s)
				}
				if len(reasons) != 1 || reasons[0] != tc.wantReason {
					t.Errorf("OnKeep reasons %q, want [%q]", reasons, tc.wantReason)
				}
			}
			exchange(t, s, c, testSizes, nil, nil)
		})
	}
}
