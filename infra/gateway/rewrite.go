package gateway

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// routes is what the response rewriters need from the gateway: the address
// clients should use for an upstream node, and a place to record topic ids.
type routes interface {
	// route returns the gateway endpoint for upstream node id, which the
	// upstream advertises at host:port.
	route(id int32, host string, port int32) (string, int32, error)
	// learnTopic records a topic id's name (record filters resolve
	// topic ids in produce and fetch v13+).
	learnTopic(id [16]byte, name string)
}

// Rewriters decode with UnsafeReadFrom: strings alias the frame buffer,
// which outlives the re-encoding; anything kept (topic names) is cloned.

// rewriteResponse rewrites a response body (after its header) for a request
// of key and version, appending the new body to dst. ok is false when key is
// not one the gateway rewrites.
func rewriteResponse(dst, body []byte, key, version int16, r routes) (out []byte, ok bool, err error) {
	switch key {
	case keyMetadata:
		out, err = rewriteMetadata(dst, body, version, r)
	case keyFindCoordinator:
		out, err = rewriteFindCoordinator(dst, body, version, r)
	case keyDescribeCluster:
		out, err = rewriteDescribeCluster(dst, body, version, r)
	case keyApiVersions:
		out, err = rewriteApiVersions(dst, body, version)
	case keyShareFetch:
		out, err = rewriteShareFetch(dst, body, version, r)
	case keyShareAcknowledge:
		out, err = rewriteShareAcknowledge(dst, body, version, r)
	default:
		return dst, false, nil
	}
	if err != nil {
		return dst, true, fmt.Errorf("%s v%d response: %w", apiName(key), version, err)
	}
	return out, true, nil
}

func rewriteMetadata(dst, body []byte, version int16, r routes) ([]byte, error) {
	resp := kmsg.MetadataResponse{Version: version}
	if err := resp.UnsafeReadFrom(body); err != nil {
		return dst, err
	}
	if err := routeAll(r, resp.Brokers, func(b *kmsg.MetadataResponseBroker) (int32, *string, *int32) {
		return b.NodeID, &b.Host, &b.Port
	}); err != nil {
		return dst, err
	}
	for _, t := range resp.Topics {
		if t.Topic != nil && t.TopicID != [16]byte{} {
			r.learnTopic(t.TopicID, *t.Topic)
		}
	}
	return resp.AppendTo(dst), nil
}

func rewriteFindCoordinator(dst, body []byte, version int16, r routes) ([]byte, error) {
	resp := kmsg.FindCoordinatorResponse{Version: version}
	if err := resp.UnsafeReadFrom(body); err != nil {
		return dst, err
	}
	if version < 4 {
		if resp.ErrorCode == 0 && resp.NodeID >= 0 {
			host, port, err := r.route(resp.NodeID, resp.Host, resp.Port)
			if err != nil {
				return dst, err
			}
			resp.Host, resp.Port = host, port
		}
	}
	if err := routeAll(r, resp.Coordinators, func(c *kmsg.FindCoordinatorResponseCoordinator) (int32, *string, *int32) {
		if c.ErrorCode != 0 || c.NodeID < 0 {
			return 0, nil, nil // no coordinator to route
		}
		return c.NodeID, &c.Host, &c.Port
	}); err != nil {
		return dst, err
	}
	return resp.AppendTo(dst), nil
}

func rewriteDescribeCluster(dst, body []byte, version int16, r routes) ([]byte, error) {
	resp := kmsg.DescribeClusterResponse{Version: version}
	if err := resp.UnsafeReadFrom(body); err != nil {
		return dst, err
	}
	// Controller endpoints (type 2) are not fronted by the gateway and
	// pass as the broker gave them; the gateway never dials them.
	if version == 0 || resp.EndpointType == 1 {
		if err := routeAll(r, resp.Brokers, func(b *kmsg.DescribeClusterResponseBroker) (int32, *string, *int32) {
			return b.NodeID, &b.Host, &b.Port
		}); err != nil {
			return dst, err
		}
	}
	return resp.AppendTo(dst), nil
}

func rewriteShareFetch(dst, body []byte, version int16, r routes) ([]byte, error) {
	resp := kmsg.ShareFetchResponse{Version: version}
	if err := resp.UnsafeReadFrom(body); err != nil {
		return dst, err
	}
	if err := routeAll(r, resp.NodeEndpoints, func(e *kmsg.ShareFetchResponseNodeEndpoint) (int32, *string, *int32) {
		return e.NodeID, &e.Host, &e.Port
	}); err != nil {
		return dst, err
	}
	return resp.AppendTo(dst), nil
}

func rewriteShareAcknowledge(dst, body []byte, version int16, r routes) ([]byte, error) {
	resp := kmsg.ShareAcknowledgeResponse{Version: version}
	if err := resp.UnsafeReadFrom(body); err != nil {
		return dst, err
	}
	if err := routeAll(r, resp.NodeEndpoints, func(e *kmsg.ShareAcknowledgeResponseNodeEndpoint) (int32, *string, *int32) {
		return e.NodeID, &e.Host, &e.Port
	}); err != nil {
		return dst, err
	}
	return resp.AppendTo(dst), nil
}

// routeAll points the endpoints in es at the gateway: endpoint gives the
// node id, host and port of one (the element types differ per response),
// or a nil host for one to leave as it is.
func routeAll[E any](r routes, es []E, endpoint func(*E) (id int32, host *string, port *int32)) error {
	for i := range es {
		id, host, port := endpoint(&es[i])
		if host == nil {
			continue
		}
		h, p, err := r.route(id, *host, *port)
		if err != nil {
			return err
		}
		*host, *port = h, p
	}
	return nil
}

// rewriteApiVersions answers with the intersection of what the broker
// offers and what the gateway handles (see versionRange). A broker that
// does not know the requested ApiVersions version answers in v0 with
// UNSUPPORTED_VERSION (KIP-511); that answer is read and rewritten as v0.
func rewriteApiVersions(dst, body []byte, version int16) ([]byte, error) {
	resp := kmsg.ApiVersionsResponse{Version: version}
	err := resp.ReadFrom(body)
	if err != nil || resp.ErrorCode == kerr.UnsupportedVersion.Code && version > 0 {
		v0 := kmsg.ApiVersionsResponse{Version: 0}
		if err0 := v0.ReadFrom(body); err0 == nil && v0.ErrorCode == kerr.UnsupportedVersion.Code {
			resp, err = v0, nil
		}
	}
	if err != nil {
		return dst, err
	}
	keys := resp.ApiKeys[:0]
	for _, k := range resp.ApiKeys {
		lo, hi, ok := versionRange(k.ApiKey, k.MinVersion, k.MaxVersion)
		if !ok {
			continue
		}
		k.MinVersion, k.MaxVersion = lo, hi
		keys = append(keys, k)
	}
	resp.ApiKeys = keys
	return resp.AppendTo(dst), nil
}
