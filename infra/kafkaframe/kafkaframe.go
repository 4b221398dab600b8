// Package kafkaframe reads Kafka's wire framing: a big-endian int32 size
// followed by that many bytes, and the request header at the start of a
// request (api_key int16, api_version int16, correlation_id int32,
// client_id nullable string and, for flexible versions, tagged fields).
// The gateway and the embedded cluster's fronts both read frames through
// it.
package kafkaframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// SizeLen is the length of a frame's size prefix.
const SizeLen = 4

// ErrTruncated means the bytes end inside a header or tagged-field section.
var ErrTruncated = errors.New("truncated")

// MalformedError is a header or tagged-field section that cannot be right
// however many more bytes follow.
type MalformedError struct {
	Reason string
}

func (e *MalformedError) Error() string { return "malformed header: " + e.Reason }

// SizeError is a frame size outside the bounds a reader accepts.
type SizeError struct {
	Size     int32
	Min, Max int
}

func (e *SizeError) Error() string {
	if e.Size < 0 || int(e.Size) < e.Min {
		return fmt.Sprintf("size %d is below the minimum %d", e.Size, e.Min)
	}
	return fmt.Sprintf("size %d exceeds the maximum frame size %d", e.Size, e.Max)
}

// CheckSize returns a *SizeError for a size outside [min, max].
func CheckSize(size int32, min, max int) error {
	if size < 0 || int(size) < min || int64(size) > int64(max) {
		return &SizeError{Size: size, Min: min, Max: max}
	}
	return nil
}

// ReadFrame reads one size-prefixed frame from r into buf (grown as needed)
// and returns the frame without its size. A size outside [min, max] is a
// *SizeError and nothing of the frame is read.
func ReadFrame(r io.Reader, buf []byte, min, max int) ([]byte, error) {
	var sz [SizeLen]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return buf, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if err := CheckSize(n, min, max); err != nil {
		return buf, err
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n, int(n)+int(n)/4)
	}
	buf = buf[:n]
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// AppendFrame appends body with its size prefix to dst.
func AppendFrame(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}

// RequestPrefixLen is the length of a request header's fixed part.
const RequestPrefixLen = 8

// RequestHeader is the fixed part of a request header.
type RequestHeader struct {
	Key     int16
	Version int16
	CorrID  int32
}

// ParseRequestPrefix reads the fixed part of a request header from the
// start of a request (the frame without its size); ok is false when the
// request is shorter than it.
func ParseRequestPrefix(req []byte) (h RequestHeader, ok bool) {
	if len(req) < RequestPrefixLen {
		return RequestHeader{}, false
	}
	return RequestHeader{
		Key:     int16(binary.BigEndian.Uint16(req[0:])),
		Version: int16(binary.BigEndian.Uint16(req[2:])),
		CorrID:  int32(binary.BigEndian.Uint32(req[4:])),
	}, true
}

// RequestHeaderLen returns the length of the whole request header (the
// fixed part, client id and, when flexible, tagged fields) at the start of
// req. It returns ErrTruncated when req ends inside the header, and
// another error when the header is malformed.
func RequestHeaderLen(req []byte, flexible bool) (int, error) {
	if len(req) < RequestPrefixLen+2 {
		return 0, ErrTruncated
	}
	n := RequestPrefixLen
	idLen := int(int16(binary.BigEndian.Uint16(req[n:])))
	n += 2
	if idLen < -1 {
		return 0, &MalformedError{Reason: fmt.Sprintf("client id length %d", idLen)}
	}
	if idLen > 0 {
		n += idLen
		if n > len(req) {
			return 0, ErrTruncated
		}
	}
	if flexible {
		m, err := SkipTags(req[n:])
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// SkipTags returns the length of the tagged-field section at the start of
// b: ErrTruncated when b ends inside it, a *MalformedError when a count,
// tag or size is invalid or larger than b could ever hold.
func SkipTags(b []byte) (int, error) {
	count, n := binary.Uvarint(b)
	if n == 0 {
		return 0, ErrTruncated
	}
	if n < 0 || count > uint64(len(b)) {
		return 0, &MalformedError{Reason: "bad tagged field count"}
	}
	for i := uint64(0); i < count; i++ {
		_, m := binary.Uvarint(b[n:])
		if m == 0 {
			return 0, ErrTruncated
		}
		if m < 0 {
			return 0, &MalformedError{Reason: "bad tag"}
		}
		n += m
		size, m := binary.Uvarint(b[n:])
		if m == 0 {
			return 0, ErrTruncated
		}
		if m < 0 || size > uint64(len(b)) {
			return 0, &MalformedError{Reason: "bad tag size"}
		}
		n += m
		if uint64(len(b)-n) < size {
			return 0, ErrTruncated
		}
		n += int(size)
	}
	return n, nil
}
