package target

import "github.com/xp-bench/xp/infra/endpoint"

// How a row's clients reach the cluster, and which gateway served a
// gateway mode: the endpoint package's types, named here so that the
// runner reaches the infrastructure through this package alone.
type (
	// Endpoint is one way into a cluster (endpoint.Endpoint).
	Endpoint = endpoint.Endpoint
	// GatewayInfo names the gateway that served a gateway mode
	// (endpoint.GatewayInfo).
	GatewayInfo = endpoint.GatewayInfo
)
