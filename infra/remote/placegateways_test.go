package remote

import (
	"reflect"
	"testing"

	"github.com/xp-bench/xp/infra/endpoint"
)

// Gateway i of every mode runs on gateway host i mod the number of hosts;
// a host's slots count its gateways of every mode in turn, and each
// fronts its transport's direct mode.
func TestPlaceGateways(t *testing.T) {
	modes := map[string]endpoint.Endpoint{"plaintext": {Bootstrap: []string{"b0:9092", "b1:9092"}}, "tls": {Bootstrap: []string{"b0:9093"}}}
	proxy := GatewaySpec{Key: "proxy", Security: "proxy", Transport: "plaintext"}
	enc := GatewaySpec{Key: "encrypt+tls", Security: "encrypt", Transport: "tls"}
	pt, tl := []string{"b0:9092", "b1:9092"}, []string{"b0:9093"}
	for _, c := range []struct {
		name  string
		specs []GatewaySpec
		count int
		gws   []string
		want  map[string][]gatewayInstance
	}{
		{"one of one mode on one host", []GatewaySpec{proxy}, 1, []string{"g0"}, map[string][]gatewayInstance{
			"g0": {{Spec: proxy, Index: 0, Slot: 0, Service: "gateway-proxy-0", Upstream: pt}}}},
		{"three of two modes on two hosts", []GatewaySpec{proxy, enc}, 3, []string{"g0", "g1"}, map[string][]gatewayInstance{
			"g0": {
				{Spec: proxy, Index: 0, Slot: 0, Service: "gateway-proxy-0", Upstream: pt},
				{Spec: proxy, Index: 2, Slot: 1, Service: "gateway-proxy-2", Upstream: pt},
				{Spec: enc, Index: 0, Slot: 2, Service: "gateway-encrypt-tls-0", Upstream: tl},
				{Spec: enc, Index: 2, Slot: 3, Service: "gateway-encrypt-tls-2", Upstream: tl}},
			"g1": {
				{Spec: proxy, Index: 1, Slot: 0, Service: "gateway-proxy-1", Upstream: pt},
				{Spec: enc, Index: 1, Slot: 1, Service: "gateway-encrypt-tls-1", Upstream: tl}}}},
		{"fewer gateways than hosts", []GatewaySpec{proxy}, 1, []string{"g0", "g1"}, map[string][]gatewayInstance{
			"g0": {{Spec: proxy, Index: 0, Slot: 0, Service: "gateway-proxy-0", Upstream: pt}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := placeGateways(c.specs, c.count, c.gws, modes); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
