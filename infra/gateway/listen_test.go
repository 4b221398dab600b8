package gateway

import "testing"

// Listen's defaults: loopback, advertised as itself, bootstrap on 9192
// and nodes from the port above it (from free ports when the bootstrap
// port is free); a wildcard host needs an advertised host, and nodes may
// not land on the bootstrap port.
func TestListenValidate(t *testing.T) {
	port := func(p int) *int { return &p }
	for _, c := range []struct {
		name                string
		in                  Listen
		host, advertised    string
		bootstrap, nodeBase int
		err                 string
	}{
		{"defaults", Listen{}, "127.0.0.1", "127.0.0.1", 9192, 9193, ""},
		{"free bootstrap port, free node ports", Listen{BootstrapPort: port(0)}, "127.0.0.1", "127.0.0.1", 0, 0, ""},
		{"node base follows the bootstrap port", Listen{BootstrapPort: port(7000)}, "127.0.0.1", "127.0.0.1", 7000, 7001, ""},
		{"wildcard host advertised", Listen{Host: "0.0.0.0", AdvertisedHost: "10.0.0.1"}, "0.0.0.0", "10.0.0.1", 9192, 9193, ""},
		{"wildcard host not advertised", Listen{Host: "::"}, "", "", 0, 0,
			"gateway config: listen.advertised_host: required when listen.host is :: (the address clients reach the gateway at)"},
		{"bootstrap port out of range", Listen{BootstrapPort: port(70000)}, "", "", 0, 0,
			"gateway config: listen.bootstrap_port: 70000 is not a port (0..65535)"},
		{"node base out of range", Listen{NodePortBase: port(-1)}, "", "", 0, 0,
			"gateway config: listen.node_port_base: -1 is not a port (0..65535)"},
		{"node base on the bootstrap port", Listen{BootstrapPort: port(9000), NodePortBase: port(9000)}, "", "", 0, 0,
			"gateway config: listen.node_port_base: 9000 would put a node on the bootstrap port 9000; use a base above it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := c.in
			err := l.validate()
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.Host != c.host || l.AdvertisedHost != c.advertised || *l.BootstrapPort != c.bootstrap || *l.NodePortBase != c.nodeBase {
				t.Errorf("host %q advertised %q bootstrap %d node base %d, want %q %q %d %d",
					l.Host, l.AdvertisedHost, *l.BootstrapPort, *l.NodePortBase, c.host, c.advertised, c.bootstrap, c.nodeBase)
			}
		})
	}
}
