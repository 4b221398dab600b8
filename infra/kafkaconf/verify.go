package kafkaconf

import (
	"crypto/tls"
	"crypto/x509"

	"github.com/twmb/franz-go/pkg/sasl"
)

type saslMech = sasl.Mechanism

func x509VerifyOptions(roots *x509.CertPool, cs tls.ConnectionState) x509.VerifyOptions {
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	return x509.VerifyOptions{Roots: roots, Intermediates: inter}
}
