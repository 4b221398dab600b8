package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

var _ target.TLSKeptReader = (*Deployer)(nil)

// hostMetrics is a gateway's metrics endpoint: a URL on host's loopback.
type hostMetrics struct {
	Host, URL string
}

// setGatewayMetrics records the metrics endpoints of the gateways serving
// key from the gateway hosts (none for gateways that are not xp's).
func (d *Deployment) setGatewayMetrics(key string, ms []hostMetrics) {
	if d.gwMetrics == nil {
		d.gwMetrics = map[string][]hostMetrics{}
	}
	d.gwMetrics[key] = ms
}

// TLSKept sums the tls_kept counters of xp's gateways serving key: those on
// the gateway hosts, or the embedded cluster's own on the broker host. Each
// gateway's metrics listen on its host's loopback only; they are read
// through the host's SSH connection (a direct-tcpip channel), so nothing
// listens beyond the host.
func (d *Deployment) TLSKept(ctx context.Context, key string) (gateway.TLSKept, error) {
	ms, onGatewayHosts := d.gwMetrics[key]
	if !onGatewayHosts {
		if m, ok := d.modes[key]; ok && m.Metrics != "" {
			if bs := d.names(planner.RoleBroker); len(bs) > 0 {
				ms = []hostMetrics{{Host: bs[0], URL: m.Metrics}}
			}
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("remote: no xp gateway with metrics serves %s", key)
	}
	sum := gateway.TLSKept{}
	for _, m := range ms {
		h := d.hosts[m.Host]
		if h == nil {
			return nil, fmt.Errorf("remote: %s: no host %s", key, m.Host)
		}
		u, err := url.Parse(m.URL)
		if err != nil {
			return nil, fmt.Errorf("remote: %s gateway on %s: metrics %q: %w", key, m.Host, m.URL, err)
		}
		addr := u.Host
		client := &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				c, err := d.client(ctx, h)
				if err != nil {
					return nil, err
				}
				return c.DialContext(ctx, network, addr)
			},
			DisableKeepAlives: true,
		}}
		k, err := gateway.ReadTLSKeptWith(ctx, client, m.URL)
		if err != nil {
			return nil, fmt.Errorf("remote: %s gateway on %s: %w", key, m.Host, err)
		}
		sum.Add(k)
	}
	return sum, nil
}

// TLSKept reads the tls_kept counters of the gateways serving modeKey in
// the current deployment (target.TLSKeptReader).
func (d *Deployer) TLSKept(ctx context.Context, modeKey string) (gateway.TLSKept, error) {
	dep := d.Deployment()
	if dep == nil {
		return nil, errors.New("remote: nothing deployed")
	}
	return dep.TLSKept(ctx, modeKey)
}
