package kafkaframe

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestReadFrame(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		want    []byte
		wantErr error
		size    bool // want a *SizeError
	}{
		{"one frame", AppendFrame(nil, []byte("abcdefgh")), []byte("abcdefgh"), nil, false},
		{"frame then more", append(AppendFrame(nil, []byte("abcd")), 0, 0), []byte("abcd"), nil, false},
		{"below the minimum", AppendFrame(nil, []byte("ab")), nil, nil, true},
		{"above the maximum", AppendFrame(nil, make([]byte, 65)), nil, nil, true},
		{"negative size", []byte{0x80, 0, 0, 0}, nil, nil, true},
		{"no size", []byte{0, 0}, nil, io.ErrUnexpectedEOF, false},
		{"empty", nil, nil, io.EOF, false},
		{"truncated body", AppendFrame(nil, []byte("abcdefgh"))[:8], nil, io.ErrUnexpectedEOF, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFrame(bytes.NewReader(tc.in), nil, 4, 64)
			var se *SizeError
			switch {
			case tc.size:
				if !errors.As(err, &se) {
					t.Fatalf("err %v, want a SizeError", err)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
			case err != nil || !bytes.Equal(got, tc.want):
				t.Fatalf("ReadFrame = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// The header length matches what kmsg writes, for flexible and
// non-flexible versions and with a null client id.
func TestRequestHeaderLenMatchesKmsg(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      kmsg.Request
		version  int16
		clientID *string
	}{
		{"metadata v1", kmsg.NewPtrMetadataRequest(), 1, strp("xp")},
		{"metadata v12 (flexible)", kmsg.NewPtrMetadataRequest(), 12, strp("a-longer-client-id")},
		{"api versions v3 (flexible), null client id", kmsg.NewPtrApiVersionsRequest(), 3, nil},
		{"produce v9 (flexible)", kmsg.NewPtrProduceRequest(), 9, strp("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.SetVersion(tc.version)
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(deref(tc.clientID))).AppendRequest(nil, tc.req, 7)
			if tc.clientID == nil {
				frame = kmsg.NewRequestFormatter().AppendRequest(nil, tc.req, 7)
			}
			req := frame[SizeLen:]
			h, ok := ParseRequestPrefix(req)
			if !ok || h.Key != tc.req.Key() || h.Version != tc.version || h.CorrID != 7 {
				t.Fatalf("prefix %+v %v", h, ok)
			}
			n, err := RequestHeaderLen(req, tc.req.IsFlexible())
			if err != nil {
				t.Fatal(err)
			}
			body := tc.req.AppendTo(nil)
			if want := len(req) - len(body); n != want {
				t.Errorf("header length %d, want %d", n, want)
			}
			for cut := 0; cut < n; cut++ {
				if _, err := RequestHeaderLen(req[:cut], tc.req.IsFlexible()); !errors.Is(err, ErrTruncated) {
					t.Fatalf("cut at %d: %v, want ErrTruncated", cut, err)
				}
			}
		})
	}
}

func TestSkipTags(t *testing.T) {
	var malformed *MalformedError
	for _, tc := range []struct {
		name      string
		in        []byte
		want      int
		truncated bool
		malformed bool
	}{
		{"none", []byte{0, 9}, 1, false, false},
		{"one tag", []byte{1, 5, 2, 'a', 'b', 9}, 5, false, false},
		{"empty", nil, 0, true, false},
		{"tag data cut", []byte{1, 5, 3, 'a'}, 0, true, false},
		{"count beyond the bytes", []byte{100, 0}, 0, false, true},
		{"size beyond the bytes", []byte{1, 5, 100}, 0, false, true},
		{"count overflows", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := SkipTags(tc.in)
			switch {
			case tc.truncated:
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("err %v, want ErrTruncated", err)
				}
			case tc.malformed:
				if !errors.As(err, &malformed) {
					t.Fatalf("err %v, want a MalformedError", err)
				}
			case err != nil || n != tc.want:
				t.Fatalf("SkipTags = %d, %v; want %d", n, err, tc.want)
			}
		})
	}
	if _, err := RequestHeaderLen([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xfe}, false); !errors.As(err, &malformed) {
		t.Errorf("client id length -2: %v, want a MalformedError", err)
	}
}

func strp(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
