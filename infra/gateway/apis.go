package gateway

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys the gateway treats specially.
const (
	keyProduce          int16 = 0
	keyFetch            int16 = 1
	keyMetadata         int16 = 3
	keyFindCoordinator  int16 = 10
	keySASLHandshake    int16 = 17
	keyApiVersions      int16 = 18
	keySASLAuthenticate int16 = 36
	keyDescribeQuorum   int16 = 55
	keyDescribeCluster  int16 = 60
	keyShareFetch       int16 = 78
	keyShareAcknowledge int16 = 79
)

// Version caps. Produce v10+ and Fetch v16+ may carry broker endpoints in a
// tagged field (KIP-951, sent with NOT_LEADER_OR_FOLLOWER); rewriting them
// would mean decoding every produce and fetch response, so the gateway
// offers the versions just below and keeps both on the byte path.
const (
	maxProduceVersion = 9
	maxFetchVersion   = 15
)

// rewritten reports whether responses of key carry broker endpoints (or,
// for ApiVersions, versions) that the gateway rewrites.
func rewritten(key int16) bool {
	switch key {
	case keyMetadata, keyFindCoordinator, keyApiVersions, keyDescribeCluster, keyShareFetch, keyShareAcknowledge:
		return true
	}
	return false
}

// versionRange is what the gateway offers clients for key when the broker
// offers [brokerMin, brokerMax]; ok is false when the key is withheld.
func versionRange(key, brokerMin, brokerMax int16) (lo, hi int16, ok bool) {
	lo, hi = brokerMin, brokerMax
	switch {
	case key == keyDescribeQuorum:
		// Its answer names controller listeners, which the gateway does
		// not front; withheld rather than answered with addresses a
		// client cannot use through the gateway.
		return 0, 0, false
	case key == keyProduce:
		hi = min(hi, maxProduceVersion)
	case key == keyFetch:
		hi = min(hi, maxFetchVersion)
	case key == keySASLHandshake:
		// v0 is followed by raw, unframed SASL tokens; the gateway
		// translates them to SaslAuthenticate (see sasl.go), so it
		// offers v0 whatever the broker's minimum. librdkafka requires
		// v0 in the range before it enables SASL at all.
		lo = 0
	case rewritten(key):
		// Decoded with kmsg: no newer than kmsg knows.
		hi = min(hi, kmsgMax(key))
	}
	return lo, hi, lo <= hi
}

// requestAllowed reports whether a client may send key at version: the
// gateway refuses versions it told the client it does not handle, because
// their responses could carry addresses it would not rewrite.
func requestAllowed(key, version int16) bool {
	switch {
	case key == keyProduce:
		return version <= maxProduceVersion
	case key == keyFetch:
		return version <= maxFetchVersion
	case key == keyApiVersions:
		// Clients probe with versions newer than the broker knows; the
		// broker answers those in v0 (KIP-511), handled by the rewriter.
		return true
	case rewritten(key):
		return version <= kmsgMax(key)
	}
	return true
}

// apiName is the metric label for key.
func apiName(key int16) string {
	if key < 0 || key > kmsg.MaxKey {
		return "Unknown"
	}
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return "Unknown"
}
