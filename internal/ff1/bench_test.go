package ff1

import "testing"

func BenchmarkEncrypt(b *testing.B) {
	c, _ := New(make([]byte, 32))
	tweak := []byte("payments\x00ssn")
	for _, bc := range []struct {
		name  string
		radix int
		n     int
	}{{"digits_9", 10, 9}, {"letters_12", 26, 12}, {"letters_40", 26, 40}, {"letters_800", 26, 800}} {
		x := make([]byte, bc.n)
		for i := range x {
			x[i] = byte(i % bc.radix)
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.Encrypt(x, bc.radix, tweak); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
