package records

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// A record whose value is filled in place encodes exactly as the same
// record with the value set, whatever the hint: the two length prefixes
// are reserved from it and moved when the real value needs more or fewer
// bytes (the varint size classes change at 64 bytes, 8 KiB and 1 MiB).
// Changes the fill makes to the headers are written too.
func TestAppendFilledMatchesAppendRecord(t *testing.T) {
	sizes := []int{0, 1, 50, 63, 64, 65, 1000, 8100, 8191, 8192, 8300, 1<<20 - 1, 1 << 20}
	hints := []int{0, 63, 64, 8191, 8192, 1 << 20, 3 << 20}
	for _, size := range sizes {
		value := bytes.Repeat([]byte{'x'}, size)
		for _, hint := range hints {
			for _, addHeader := range []bool{false, true} {
				name := fmt.Sprintf("value %d hint %d header %v", size, hint, addHeader)
				base := Record{TimestampDelta: 70, OffsetDelta: 3, Key: []byte("key"),
					Headers: AppendHeader(nil, "h", []byte("v")), NumHeaders: 1}
				want := base
				want.Value = value
				if addHeader {
					want.Headers = AppendHeader(bytes.Clone(base.Headers), "x-enc", []byte("1"))
					want.NumHeaders = 2
				}
				r := base
				r.FillHint = hint
				r.Fill = func(dst []byte) ([]byte, error) {
					if addHeader {
						r.Headers, r.NumHeaders = want.Headers, 2
					}
					return append(dst, value...), nil
				}
				prefix := []byte("earlier records")
				got, err := appendFilled(bytes.Clone(prefix), &r)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if exp := AppendRecord(bytes.Clone(prefix), &want); !bytes.Equal(got, exp) {
					t.Fatalf("%s: encoding differs (%d bytes, want %d)", name, len(got), len(exp))
				}
			}
		}
	}
}

// Through Rewrite, a callback that fills values builds the same batch as
// one that sets them, CRC included; a fill's error fails the rewrite.
func TestRewriteFill(t *testing.T) {
	set := buildSet(t, None, sampleRecords())
	upper := func(v []byte) []byte { return bytes.ToUpper(append(bytes.Clone(v), "-changed"...)) }
	w := Get()
	defer Put(w)
	want, err := w.Rewrite(nil, set, func(_ *BatchInfo, r *Record) (bool, error) {
		r.Value = upper(r.Value)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.Rewrite(nil, set, func(_ *BatchInfo, r *Record) (bool, error) {
		v := r.Value
		r.Fill, r.FillHint = func(dst []byte) ([]byte, error) { return append(dst, upper(v)...), nil }, 10
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("filled batch differs from the set one (%d vs %d bytes)", len(got), len(want))
	}
	// The next record parsed does not keep the previous one's fill.
	calls := 0
	if _, err := w.Rewrite(nil, set, func(_ *BatchInfo, r *Record) (bool, error) {
		if calls++; calls == 1 {
			r.Fill = func(dst []byte) ([]byte, error) { return append(dst, "first"...), nil }
		} else if r.Fill != nil {
			t.Errorf("record %d arrives with a fill set", calls)
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := w.Rewrite(nil, set, func(_ *BatchInfo, r *Record) (bool, error) {
		r.Fill = func(dst []byte) ([]byte, error) { return dst, boom }
		return true, nil
	}); !errors.Is(err, boom) {
		t.Fatalf("fill error: got %v", err)
	}
	// A corrupt batch still reports its CRC first.
	bad := bytes.Clone(set)
	bad[len(bad)-1] ^= 1
	if _, err := w.Rewrite(nil, bad, func(_ *BatchInfo, r *Record) (bool, error) {
		r.Fill = func(dst []byte) ([]byte, error) { return dst, boom }
		return true, nil
	}); !errors.Is(err, ErrCRC) {
		t.Fatalf("corrupt batch with a failing fill: got %v, want ErrCRC", err)
	}
}
