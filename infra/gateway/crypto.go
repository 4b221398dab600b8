package gateway

import (
	"crypto/cipher"
	"fmt"

	"github.com/xp-bench/xp/internal/aesgcm"
	"github.com/xp-bench/xp/internal/tlsrec"
	"github.com/xp-bench/xp/planner"
)

// Record layers and ciphers (CryptoInfo).
const (
	RecordLayerCryptoTLS = "crypto/tls"
	RecordLayerTLSRec    = "tlsrec"
	// RecordLayerNone: neither leg is TLS.
	RecordLayerNone = "none"

	CipherStd  = aesgcm.NameStd  // crypto/cipher's AES-GCM (crypto/tls's own)
	CipherVAES = aesgcm.NameVAES // internal/aesgcm on VAES
)

// CryptoInfo is what a gateway's cryptography runs on, resolved when it
// starts from Config.Crypto, this binary's Go release and this CPU; each
// attempt of a plan row records it.
type CryptoInfo struct {
	// Requested is Config.Crypto: std or fast.
	Requested string `json:"requested"`
	// RecordLayer carries the TLS legs' records: crypto/tls, tlsrec (TLS
	// 1.3 AES-GCM sessions; others stay with crypto/tls, logged), or none
	// when neither leg is TLS.
	RecordLayer string `json:"record_layer"`
	// Cipher is the AES-GCM of tlsrec's records and of envelopes:
	// crypto/cipher or aesgcm-vaes.
	Cipher string `json:"cipher"`
	// Fallback says why fast did not get all of xp's own; empty otherwise.
	Fallback string `json:"fallback,omitempty"`
}

func (c CryptoInfo) String() string {
	s := fmt.Sprintf("crypto %s: record layer %s, cipher %s", c.Requested, c.RecordLayer, c.Cipher)
	if c.Fallback != "" {
		s += " (" + c.Fallback + ")"
	}
	return s
}

// CipherUser is a RecordFilter that encrypts (the encrypting modes): Start
// hands it, before serving, the AES-GCM the gateway's crypto selects.
type CipherUser interface {
	UseCipher(newAEAD func(key []byte) (cipher.AEAD, error))
}

// resolveCrypto decides what runs for cfg. xpAESGCM is the XP_AESGCM
// environment variable, checked whatever the level (only documented values
// are accepted).
func resolveCrypto(cfg *Config, xpAESGCM string) (CryptoInfo, func([]byte) (cipher.AEAD, error), error) {
	im, err := aesgcm.Select(xpAESGCM)
	if err != nil {
		return CryptoInfo{}, nil, err
	}
	info := CryptoInfo{Requested: cfg.Crypto, RecordLayer: RecordLayerCryptoTLS, Cipher: CipherStd}
	if cfg.Client.Transport == planner.SecurityPlaintext && cfg.Upstream.Transport == planner.SecurityPlaintext {
		info.RecordLayer = RecordLayerNone
	}
	if cfg.Crypto != planner.GatewayCryptoFast {
		return info, aesgcm.NewStd, nil
	}
	var why []string
	if info.RecordLayer != RecordLayerNone {
		if ok, reason := tlsrec.Supported(); ok {
			info.RecordLayer = RecordLayerTLSRec
		} else {
			why = append(why, reason)
		}
	}
	info.Cipher = im.Name
	if im.Why != "" {
		why = append(why, "cipher: "+im.Why)
	}
	for i, w := range why {
		if i > 0 {
			info.Fallback += "; "
		}
		info.Fallback += w
	}
	return info, im.New, nil
}
