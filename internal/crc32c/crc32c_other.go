//go:build !amd64

package crc32c

func haveFold() bool { return false }

func fold(crc uint32, p []byte, k *foldConsts) uint32 {
	panic("crc32c: folding kernel is amd64-only")
}
