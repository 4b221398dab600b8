package loadgen

import (
	"embed"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"

	"google.golang.org/protobuf/encoding/protowire"
)

// Schema holds the shipped payload schemas: record.avsc (Avro), record.proto
// and its descriptor set record.pb (Protobuf).
//
//go:embed schema/record.avsc schema/record.proto schema/record.pb
var Schema embed.FS

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Digest is the 64-bit check carried with every record: CRC-32C of key
// then value in the high 32 bits, CRC-32 (IEEE) of the same bytes in the
// low 32 bits. Two independent polynomials make a 64-bit check, and both
// run on CPU instructions (SSE 4.2, PCLMULQDQ), several times faster than
// a table-driven CRC-64: consumers check every record.
func Digest(key, value []byte) uint64 {
	c := crc32.Update(crc32.Update(0, castagnoli, key), castagnoli, value)
	i := crc32.Update(crc32.ChecksumIEEE(key), crc32.IEEETable, value)
	return uint64(c)<<32 | uint64(i)
}

var statuses = [...]string{"ACTIVE", "CLOSED", "FROZEN", "REVIEW"}

const (
	idLen     = 36
	statusLen = 6
	ssnLen    = 11
	alnum     = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
)

// payloads makes record values. Byte payloads come from a pool of seeded
// random values with precomputed digests (no per-record hashing or
// allocation); structured records are generated per record into a reused
// buffer.
type payloads struct {
	encoding string
	size     int
	pool     [][]byte
	digests  []uint64
	notes    []byte // random alphanumeric text the notes field is cut from
	notesLen int
}

// newEncoder validates encoding and size and returns a payload maker
// without its random pools (see fill).
func newEncoder(encoding string, size int) (*payloads, error) {
	p := &payloads{encoding: encoding, size: size}
	switch encoding {
	case EncodingBytes:
		return p, nil
	case EncodingJSON, EncodingAvro, EncodingProtobuf:
	default:
		return nil, fmt.Errorf("--encoding %q: want bytes, json, avro or protobuf", encoding)
	}
	n, ok := notesFor(encoding, size)
	if !ok {
		return nil, fmt.Errorf("--message-size %d is too small for --encoding %s (minimum %d)", size, encoding, structuredSize(encoding, 0))
	}
	p.notesLen = n
	return p, nil
}

// fill creates the random pools from seed.
func (p *payloads) fill(seed int64) {
	r := rand.New(rand.NewPCG(uint64(seed), 0x78702d7061796c64))
	if p.encoding == EncodingBytes {
		k := (8 << 20) / p.size
		k = max(16, min(k, 4096))
		p.pool = make([][]byte, k)
		p.digests = make([]uint64, k)
		buf := make([]byte, k*p.size)
		for i := 0; i+8 <= len(buf); i += 8 {
			binary.LittleEndian.PutUint64(buf[i:], r.Uint64())
		}
		for i := range p.pool {
			p.pool[i] = buf[i*p.size : (i+1)*p.size : (i+1)*p.size]
			p.digests[i] = Digest(nil, p.pool[i])
		}
		return
	}
	p.notes = make([]byte, max(1<<20, 4*p.notesLen))
	for i := range p.notes {
		p.notes[i] = alnum[r.IntN(len(alnum))]
	}
}

// structuredSize is the encoded size of a record whose notes has n bytes.
func structuredSize(encoding string, n int) int {
	str := func(field, l int) int { // protobuf: tag, length, bytes
		return protowire.SizeTag(protowire.Number(field)) + protowire.SizeBytes(l)
	}
	avroStr := func(l int) int { return protowire.SizeVarint(protowire.EncodeZigZag(int64(l))) + l }
	switch encoding {
	case EncodingJSON:
		return len(`{"id":"","status":"","ssn":"","notes":""}`) + idLen + statusLen + ssnLen + n
	case EncodingAvro:
		return avroStr(idLen) + avroStr(statusLen) + avroStr(ssnLen) + avroStr(n)
	case EncodingProtobuf:
		return str(1, idLen) + str(2, statusLen) + str(3, ssnLen) + str(4, n)
	}
	return 0
}

// notesFor finds the notes length whose record is closest to size without
// exceeding it (exact except where a length prefix grows by a byte).
func notesFor(encoding string, size int) (int, bool) {
	if structuredSize(encoding, 0) > size {
		return 0, false
	}
	n := size - structuredSize(encoding, 0)
	for n > 0 && structuredSize(encoding, n) > size {
		n--
	}
	return n, true
}

// next returns the value of one record and its digest. dst is reused for
// structured encodings; byte payloads are shared and must not be written.
func (p *payloads) next(r *rand.Rand, dst []byte) ([]byte, uint64) {
	if p.encoding == EncodingBytes {
		i := r.IntN(len(p.pool))
		return p.pool[i], p.digests[i]
	}
	var id [idLen]byte
	uuid4(r, &id)
	status := statuses[r.IntN(len(statuses))]
	var ssn [ssnLen]byte
	v := r.Uint64()
	for i := range ssn {
		if i == 3 || i == 6 {
			ssn[i] = '-'
			continue
		}
		ssn[i] = byte('0' + v%10)
		v /= 10
	}
	off := r.IntN(len(p.notes) - p.notesLen + 1)
	notes := p.notes[off : off+p.notesLen]
	b := dst[:0]
	switch p.encoding {
	case EncodingJSON:
		b = append(b, `{"id":"`...)
		b = append(b, id[:]...)
		b = append(b, `","status":"`...)
		b = append(b, status...)
		b = append(b, `","ssn":"`...)
		b = append(b, ssn[:]...)
		b = append(b, `","notes":"`...)
		b = append(b, notes...)
		b = append(b, `"}`...)
	case EncodingAvro:
		// Avro binary of schema/record.avsc: each string is a zig-zag
		// varint length and its bytes, fields in schema order. Tests
		// decode every encoding with hamba/avro against the shipped
		// schema.
		for _, s := range [][]byte{id[:], []byte(status), ssn[:], notes} {
			b = binary.AppendVarint(b, int64(len(s)))
			b = append(b, s...)
		}
	case EncodingProtobuf:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, id[:])
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, status)
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, ssn[:])
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, notes)
	}
	return b, Digest(nil, b)
}

func uuid4(r *rand.Rand, out *[idLen]byte) {
	const hex = "0123456789abcdef"
	var raw [16]byte
	binary.LittleEndian.PutUint64(raw[:8], r.Uint64())
	binary.LittleEndian.PutUint64(raw[8:], r.Uint64())
	raw[6] = raw[6]&0x0f | 0x40
	raw[8] = raw[8]&0x3f | 0x80
	j := 0
	for i, c := range raw {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hex[c>>4], hex[c&0x0f]
		j += 2
	}
}
