package tlsrec

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"
)

// TestMalformedRecords feeds crafted records (sealed under the right key
// unless said otherwise) and checks the error and the alert sent back.
func TestMalformedRecords(t *testing.T) {
	type rec = func(d *direction) []byte
	inner := func(b ...byte) rec { return func(d *direction) []byte { return seal(d, b) } }
	raw := func(b ...byte) rec { return func(*direction) []byte { return b } }
	app := inner('h', 'i', typeApplicationData)
	many := func(n int, r rec) []rec {
		out := make([]rec, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	tampered := func(d *direction) []byte {
		r := seal(d, []byte{'x', typeApplicationData})
		r[len(r)-1] ^= 1
		return r
	}
	cases := []struct {
		name      string
		records   []rec
		wantData  string
		wantErr   error // matched with errors.Is; nil when wantAlert is set
		wantAlert Alert // the alert we must send (and report), or 255 for none
		remote    Alert // for a RemoteAlertError
	}{
		{"close_notify", []rec{app, inner(1, 0, typeAlert)}, "hi", io.EOF, 255, 0},
		{"user_canceled then close_notify", []rec{inner(1, 90, typeAlert), app, inner(1, 0, typeAlert)}, "hi", io.EOF, 255, 0},
		{"padding", []rec{inner('h', 'i', typeApplicationData, 0, 0, 0, 0), inner(1, 0, typeAlert, 0)}, "hi", io.EOF, 255, 0},
		{"empty records", append(many(10, inner(typeApplicationData)), app, inner(1, 0, typeAlert)), "hi", io.EOF, 255, 0},
		{"ticket", []rec{inner(msgNewSessionTicket, 0, 0, 3, 1, 2, 3, typeHandshake), app}, "hi", io.EOF, 255, 0},
		{"ticket split across records", []rec{inner(msgNewSessionTicket, 0, typeHandshake), inner(0, 2, 7, typeHandshake), inner(7, typeHandshake), app}, "hi", io.EOF, 255, 0},
		{"peer alert", []rec{app, inner(2, 40, typeAlert)}, "hi", nil, 255, AlertHandshakeFailure},
		{"tag failure", []rec{app, tampered}, "hi", nil, AlertBadRecordMAC, 0},
		{"plaintext record type", []rec{raw(21, 3, 3, 0, 2, 2, 40)}, "", nil, AlertUnexpectedMessage, 0},
		{"ciphertext too long", []rec{raw(23, 3, 3, 0x41, 0x01)}, "", nil, AlertRecordOverflow, 0},
		{"ciphertext too short", []rec{raw(23, 3, 3, 0, 16)}, "", nil, AlertDecodeError, 0},
		{"no content type", []rec{inner(0, 0, 0)}, "", nil, AlertUnexpectedMessage, 0},
		{"unknown content type", []rec{inner('x', 99)}, "", nil, AlertUnexpectedMessage, 0},
		{"content too long", []rec{inner(append(make([]byte, maxPlaintext+1), typeApplicationData)...)}, "", nil, AlertRecordOverflow, 0},
		{"empty handshake record", []rec{inner(typeHandshake)}, "", nil, AlertUnexpectedMessage, 0},
		{"KeyUpdate not last in its record", []rec{inner(msgKeyUpdate, 0, 0, 1, 0, msgNewSessionTicket, 0, 0, 0, typeHandshake)}, "", nil, AlertUnexpectedMessage, 0},
		{"malformed KeyUpdate", []rec{inner(msgKeyUpdate, 0, 0, 1, 2, typeHandshake)}, "", nil, AlertDecodeError, 0},
		{"post-handshake CertificateRequest", []rec{inner(13, 0, 0, 0, typeHandshake)}, "", nil, AlertUnexpectedMessage, 0},
		{"handshake message too long", []rec{inner(msgNewSessionTicket, 0x7f, 0, 0, typeHandshake)}, "", nil, AlertUnexpectedMessage, 0},
		{"data inside a handshake message", []rec{inner(msgNewSessionTicket, 0, 0, 9, typeHandshake), app}, "", nil, AlertUnexpectedMessage, 0},
		{"alert inside a handshake message", []rec{inner(msgNewSessionTicket, 0, 0, 9, typeHandshake), inner(1, 0, typeAlert)}, "", nil, AlertUnexpectedMessage, 0},
		{"malformed alert", []rec{inner(1, typeAlert)}, "", nil, AlertDecodeError, 0},
		{"too many empty records", many(maxUselessRecords+1, inner(typeApplicationData)), "", nil, AlertUnexpectedMessage, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := fuzzDirection(t)
			var wire []byte
			for _, r := range tc.records {
				wire = append(wire, r(&d)...)
			}
			c := readerOver(t, wire)
			out := c.raw.(*wireConn)
			var sent bytes.Buffer
			out.w = &sent
			data, err := drain(t, c, len(tc.records)+2)
			if string(data) != tc.wantData {
				t.Errorf("data %q, want %q", data, tc.wantData)
			}
			switch {
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("error %v, want %v", err, tc.wantErr)
				}
			case tc.wantAlert != 255:
				var pe *ProtocolError
				if !errors.As(err, &pe) || pe.Alert != tc.wantAlert {
					t.Errorf("error %v, want a ProtocolError with %s", err, tc.wantAlert)
				}
			default:
				var re *RemoteAlertError
				if !errors.As(err, &re) || re.Alert != tc.remote {
					t.Errorf("error %v, want the peer's %s", err, tc.remote)
				}
			}
			// What went back: exactly our fatal alert, sealed under our
			// write key (the same secret as the reader's in these tests).
			if tc.wantAlert == 255 {
				if sent.Len() != 0 {
					t.Errorf("sent %d bytes, want nothing", sent.Len())
				}
				return
			}
			peer := fuzzDirection(t)
			b := sent.Bytes()
			if len(b) < recordHeaderLen {
				t.Fatalf("sent %d bytes, want an alert record", len(b))
			}
			nonce, _ := peer.nextNonce()
			pt, err := peer.aead.Open(nil, nonce, b[recordHeaderLen:], b[:recordHeaderLen])
			if err != nil || !bytes.Equal(pt, []byte{2, byte(tc.wantAlert), typeAlert}) {
				t.Errorf("sent %x (%v), want a fatal %s alert", pt, err, tc.wantAlert)
			}
			if _, err := c.Write([]byte("x")); err == nil {
				t.Error("Write after a fatal alert succeeded")
			}
		})
	}
}

// Sequence numbers never wrap: the last one is refused on both sides.
func TestSequenceOverflow(t *testing.T) {
	c := readerOver(t, nil)
	c.keyUpdateAfter = math.MaxUint64 // as if KeyUpdates were off
	c.out.seq = math.MaxUint64 - 1
	if _, err := c.Write([]byte("last")); err != nil {
		t.Fatalf("Write with the last sequence number: %v", err)
	}
	if _, err := c.Write([]byte("one more")); !errors.Is(err, ErrSequenceOverflow) {
		t.Errorf("Write past the last sequence number: %v", err)
	}

	d := fuzzDirection(t)
	r := readerOver(t, seal(&d, []byte{'x', typeApplicationData}))
	r.in.seq = math.MaxUint64
	var pe *ProtocolError
	if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.As(err, &pe) || pe.Alert != AlertInternalError {
		t.Errorf("Read past the last sequence number = %d, %v", n, err)
	}
}

// With keyUpdateAfter records sent, the next record goes under a new key.
func TestKeyUpdateBeforeLimit(t *testing.T) {
	var sent bytes.Buffer
	c := readerOver(t, nil)
	c.raw.(*wireConn).w = &sent
	c.keyUpdateAfter = 2
	for range 3 {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	// The peer's view: x, x, KeyUpdate, then x under the next key.
	peer := readerOver(t, sent.Bytes())
	data, err := drain(t, peer, 10)
	if string(data) != "xxx" || !errors.Is(err, io.EOF) || peer.in.updates != 1 || c.out.updates != 1 {
		t.Errorf("peer read %q, %v, %d updates; writer %d updates", data, err, peer.in.updates, c.out.updates)
	}
}
