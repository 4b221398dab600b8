package records

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch's compression codec (attributes bits 0-2).
type Codec int8

// The codecs of record batch v2.
const (
	None Codec = iota
	Gzip
	Snappy
	LZ4
	Zstd
)

func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", int8(c))
}

// xerialMagic starts snappy data in the framing of snappy-java (the Java
// client's default); other clients write a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialBlock = 32 << 10

// codecs holds the reusable compressors of one Rewriter.
type codecs struct {
	gzr  gzip.Reader
	lzr  *lz4.Reader
	zdec *zstd.Decoder
	br   bytes.Reader
	buf  bytes.Buffer // the spare capacity of compress's dst, for kgo
	max  int
	// xerial remembers whether the last snappy input was xerial framed, so
	// the batch goes back in the framing it came in.
	xerial bool
}

// decompress appends the decompressed src to dst, never more than max
// bytes (ErrTooLarge). It stays ours rather than kgo.DefaultDecompressor,
// which bounds output only at 2 GiB: a gateway decompresses batches from
// any client, and one small batch must not make it allocate gigabytes.
func (c *codecs) decompress(dst []byte, codec Codec, src []byte) ([]byte, error) {
	switch codec {
	case Gzip:
		c.br.Reset(src)
		if err := c.gzr.Reset(&c.br); err != nil {
			return dst, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		c.gzr.Multistream(true)
		return c.readAll(dst, &c.gzr)
	case LZ4:
		c.br.Reset(src)
		if c.lzr == nil {
			c.lzr = lz4.NewReader(&c.br)
		} else {
			c.lzr.Reset(&c.br)
		}
		return c.readAll(dst, c.lzr)
	case Zstd:
		if c.zdec == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(uint64(c.max)))
			if err != nil {
				return dst, err
			}
			c.zdec = d
		}
		out, err := c.zdec.DecodeAll(src, dst)
		if err != nil {
			return dst, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		return out, nil
	case Snappy:
		c.xerial = len(src) >= 16 && bytes.HasPrefix(src, xerialMagic)
		if !c.xerial {
			return c.unsnappy(dst, src)
		}
		src = src[16:]
		for len(src) > 0 {
			if len(src) < 4 {
				return dst, fmt.Errorf("%w: xerial snappy chunk", ErrCorrupt)
			}
			n := binary.BigEndian.Uint32(src)
			if uint64(len(src)-4) < uint64(n) {
				return dst, fmt.Errorf("%w: xerial snappy chunk", ErrCorrupt)
			}
			var err error
			if dst, err = c.unsnappy(dst, src[4:4+n]); err != nil {
				return dst, err
			}
			src = src[4+n:]
		}
		return dst, nil
	}
	return dst, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, codec)
}

func (c *codecs) unsnappy(dst, src []byte) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	if len(dst)+n > c.max {
		return dst, ErrTooLarge
	}
	dst = grow(dst, n)
	if _, err := s2.Decode(dst[len(dst):len(dst)+n], src); err != nil {
		return dst, fmt.Errorf("%w: snappy: %v", ErrCorrupt, err)
	}
	return dst[:len(dst)+n], nil
}

func (c *codecs) readAll(dst []byte, r io.Reader) ([]byte, error) {
	start := len(dst)
	for stalls := 0; ; {
		if len(dst)-start > c.max {
			return dst, ErrTooLarge
		}
		dst = grow(dst, 4096)
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if n == 0 && err == nil {
			if stalls++; stalls > 100 {
				return dst, fmt.Errorf("%w: %v", ErrCorrupt, io.ErrNoProgress)
			}
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
}

// compress appends src compressed with codec to dst. gzip, lz4 and zstd
// are franz-go's own compressors (kgo.DefaultCompressor), each at its
// fastest level (gzip 1, lz4 fast, zstd fastest): the gateway recompresses
// on the request path, where a slightly larger batch costs less than the
// added latency and CPU. Snappy stays ours: a batch goes back in the
// framing it came in (xerial, snappy-java's default, or a raw block), and
// franz-go writes raw blocks only.
func (c *codecs) compress(dst []byte, codec Codec, src []byte) ([]byte, error) {
	switch codec {
	case Gzip, LZ4, Zstd:
		comp, err := kgoCompressor(codec)
		if err != nil {
			return dst, err
		}
		// The compressor writes into the spare capacity of dst when it
		// fits, so the common case copies nothing.
		spare := dst[len(dst):]
		c.buf = *bytes.NewBuffer(spare)
		out, used := comp.Compress(&c.buf, src)
		c.buf = bytes.Buffer{}
		if used == kgo.CodecError {
			return dst, fmt.Errorf("records: %s compression failed", codec)
		}
		if len(out) > 0 && cap(spare) >= len(out) && &out[0] == &spare[:1][0] {
			return dst[:len(dst)+len(out)], nil
		}
		return append(dst, out...), nil
	case Snappy:
		if !c.xerial {
			return snappyBlock(dst, src), nil
		}
		dst = append(dst, xerialMagic...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
		for len(src) > 0 {
			chunk := src[:min(len(src), xerialBlock)]
			src = src[len(chunk):]
			at := len(dst)
			dst = append(dst, 0, 0, 0, 0)
			dst = snappyBlock(dst, chunk)
			binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
		}
		return dst, nil
	}
	return dst, fmt.Errorf("records: unknown compression codec %d", codec)
}

// kgoCompressors are franz-go's compressors of the gateway's codecs, made
// once (they pool their encoders and are safe for concurrent use).
var kgoCompressors = sync.OnceValues(func() (map[Codec]kgo.Compressor, error) {
	m := map[Codec]kgo.Compressor{}
	for codec, cc := range map[Codec]kgo.CompressionCodec{
		Gzip: kgo.GzipCompression().WithLevel(gzip.BestSpeed),
		LZ4:  kgo.Lz4Compression().WithLevel(0), // lz4.Fast
		Zstd: kgo.ZstdCompression().WithLevel(int(zstd.SpeedFastest)),
	} {
		comp, err := kgo.DefaultCompressor(cc)
		if err != nil {
			return nil, fmt.Errorf("records: %s compressor: %w", codec, err)
		}
		m[codec] = comp
	}
	return m, nil
})

func kgoCompressor(codec Codec) (kgo.Compressor, error) {
	m, err := kgoCompressors()
	if err != nil {
		return nil, err
	}
	return m[codec], nil
}

func snappyBlock(dst, src []byte) []byte {
	n := s2.MaxEncodedLen(len(src))
	dst = grow(dst, n)
	out := s2.EncodeSnappy(dst[len(dst):len(dst)+n], src)
	return dst[:len(dst)+len(out)]
}

// grow makes room for n more bytes without changing len.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), 2*cap(b)+n)
	copy(nb, b)
	return nb
}
