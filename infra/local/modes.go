package local

import (
	"encoding/json"
	"strings"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/gateway"
)

// Modes are a cluster's endpoints by mode name. Their JSON is the form
// `xp cluster local --json` prints, ClusterFile holds and the local
// target's child processes exchange: each mode's bootstrap one
// comma-separated string (Kafka's bootstrap.servers), with its upstream
// and metrics endpoint, e.g.
//
//	{"tls":{"bootstrap":"127.0.0.1:40001","client_config":"/d/tls.properties"},
//	 "proxy":{"bootstrap":"127.0.0.1:40011","client_config":"/d/proxy.properties",
//	          "upstream":{...},"crypto":{...},"metrics":"http://127.0.0.1:40012/metrics"}}
type Modes map[string]endpoint.Endpoint

// listedMode is one mode of Modes as JSON.
type listedMode struct {
	Bootstrap    string              `json:"bootstrap"`
	ClientConfig string              `json:"client_config"`
	Upstream     *listedMode         `json:"upstream,omitempty"`
	Crypto       *gateway.CryptoInfo `json:"crypto,omitempty"`
	Metrics      string              `json:"metrics,omitempty"`
}

func listed(e endpoint.Endpoint) *listedMode {
	l := &listedMode{Bootstrap: strings.Join(e.Bootstrap, ","), ClientConfig: e.ClientConfig, Crypto: e.Crypto, Metrics: e.Metrics}
	if e.Upstream != nil {
		l.Upstream = listed(*e.Upstream)
	}
	return l
}

func (l *listedMode) endpoint() endpoint.Endpoint {
	e := endpoint.Endpoint{ClientConfig: l.ClientConfig, Crypto: l.Crypto, Metrics: l.Metrics}
	if l.Bootstrap != "" {
		e.Bootstrap = strings.Split(l.Bootstrap, ",")
	}
	if l.Upstream != nil {
		up := l.Upstream.endpoint()
		e.Upstream = &up
	}
	return e
}

// MarshalJSON writes m as `xp cluster local` prints it.
func (m Modes) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	out := make(map[string]*listedMode, len(m))
	for k, e := range m {
		out[k] = listed(e)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Modes) UnmarshalJSON(b []byte) error {
	var in map[string]*listedMode
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	if in == nil {
		*m = nil
		return nil
	}
	*m = make(Modes, len(in))
	for k, l := range in {
		if l == nil {
			l = &listedMode{}
		}
		(*m)[k] = l.endpoint()
	}
	return nil
}
