package target

import "github.com/xp-bench/xp/infra/gateway"

// What a gateway row's attempt records about the gateway's cryptography,
// named here so that the runner reaches the infrastructure through this
// package alone.
type (
	// CryptoInfo is what a gateway's cryptography runs on
	// (gateway.CryptoInfo).
	CryptoInfo = gateway.CryptoInfo
	// TLSKept counts the TLS legs of a gateway_crypto fast gateway that
	// crypto/tls carried instead of tlsrec (gateway.TLSKept).
	TLSKept = gateway.TLSKept
)

// RecordLayerTLSRec is CryptoInfo.RecordLayer when a gateway runs xp's own
// TLS record layer (gateway.RecordLayerTLSRec): the only case with
// TLSKept counters to read.
const RecordLayerTLSRec = gateway.RecordLayerTLSRec
