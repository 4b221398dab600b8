package kafkaconf

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// kafkaKeys reads a list of testdata/kafka-keys-*.txt (written by
// testdata/kafkakeys from Apache Kafka's source).
func kafkaKeys(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			keys[l] = true
		}
	}
	if len(keys) < 200 {
		t.Fatalf("%s: %d keys; the list is truncated", file, len(keys))
	}
	return keys
}

// parseProps reads server.properties as Kafka's java.util.Properties
// would for the lines xp writes: key=value, # comments, blank lines.
func parseProps(t *testing.T, b []byte) map[string]string {
	t.Helper()
	props := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("line %q has no =", l)
		}
		if _, dup := props[k]; dup {
			t.Fatalf("%s set twice", k)
		}
		props[k] = v
	}
	return props
}

// listenerNames returns the names of a listeners value (NAME://host:port,...).
func listenerNames(v string) []string {
	var out []string
	for _, l := range strings.Split(v, ",") {
		if name, _, ok := strings.Cut(l, "://"); ok {
			out = append(out, name)
		}
	}
	return out
}

// kafkaKey is the key of Kafka's ConfigDef a rendered key stands for:
// listener.name.<listener>.<key> and, for sasl.jaas.config,
// listener.name.<listener>.<mechanism>.sasl.jaas.config (Kafka's
// listener-prefixed overrides). It fails the test when the listener or
// mechanism is not one the node has.
func kafkaKey(t *testing.T, k string, props map[string]string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(k, "listener.name.")
	if !ok {
		return k
	}
	l, key, _ := strings.Cut(rest, ".")
	if l != strings.ToLower(l) || !slices.Contains(listenerNames(props["listeners"]), strings.ToUpper(l)) {
		t.Errorf("%s: listener %q is not a lower-case listener of this node (%s)", k, l, props["listeners"])
	}
	if mech, jaas, ok := strings.Cut(key, ".sasl.jaas.config"); ok && jaas == "" {
		enabled := strings.Split(props["listener.name."+l+".sasl.enabled.mechanisms"], ",")
		if !slices.Contains(enabled, strings.ToUpper(mech)) || mech != strings.ToLower(mech) {
			t.Errorf("%s: mechanism %q is not a lower-case mechanism of %s.sasl.enabled.mechanisms (%v)", k, mech, l, enabled)
		}
		return "sasl.jaas.config"
	}
	if !strings.HasPrefix(key, "ssl.") && !strings.HasPrefix(key, "sasl.") {
		t.Errorf("%s: only ssl.* and sasl.* keys are overridden per listener here", k)
	}
	return key
}

// TestServerKeysExistInKafka: every key xp renders into server.properties
// is a broker config of Kafka 3.9 and 4.0 (lists extracted from Kafka's
// source), and the rendered nodes pass the KRaft rules of Kafka's
// KafkaConfig.validateValues (3.9 and trunk read side by side): process
// roles and voters, controller listeners, advertised and inter-broker
// listeners, the security protocol map.
func TestServerKeysExistInKafka(t *testing.T) {
	lists := map[string]map[string]bool{
		"3.9": kafkaKeys(t, "testdata/kafka-keys-3.9.txt"),
		"4.0": kafkaKeys(t, "testdata/kafka-keys-4.0.txt"),
	}
	for _, tc := range []struct{ brokers, controllers int }{{1, 0}, {1, 3}, {3, 0}, {3, 3}, {4, 0}, {5, 0}, {5, 3}, {9, 0}, {9, 5}} {
		s := testServer(tc.brokers, tc.controllers)
		for _, n := range s.Nodes {
			t.Run(fmt.Sprintf("%db-%dc/node-%d", tc.brokers, tc.controllers, n.ID), func(t *testing.T) {
				b, err := s.Properties(n.ID)
				if err != nil {
					t.Fatal(err)
				}
				props := parseProps(t, b)
				for k := range props {
					key := kafkaKey(t, k, props)
					for v, keys := range lists {
						if !keys[key] {
							t.Errorf("%s (as %s) is no broker config of Kafka %s", k, key, v)
						}
					}
				}
				checkKRaft(t, props)
			})
		}
	}
}

// checkKRaft applies the KRaft checks of Kafka's KafkaConfig.validateValues
// that xp's configs can fail.
func checkKRaft(t *testing.T, p map[string]string) {
	t.Helper()
	id, err := strconv.Atoi(p["node.id"])
	if err != nil || id < 0 {
		t.Fatalf("node.id %q", p["node.id"])
	}
	roles := strings.Split(p["process.roles"], ",")
	broker, controller := slices.Contains(roles, "broker"), slices.Contains(roles, "controller")
	var voters []int
	for _, v := range strings.Split(p["controller.quorum.voters"], ",") {
		vid, hp, ok := strings.Cut(v, "@")
		n, err := strconv.Atoi(vid)
		host, port, herr := net.SplitHostPort(hp)
		if !ok || err != nil || herr != nil || host == "" || port == "" {
			t.Fatalf("controller.quorum.voters entry %q: want id@host:port", v)
		}
		voters = append(voters, n)
	}
	ctrl := strings.Split(p["controller.listener.names"], ",")
	listeners := listenerNames(p["listeners"])
	advertised := listenerNames(p["advertised.listeners"])
	protocols := map[string]string{}
	for _, e := range strings.Split(p["listener.security.protocol.map"], ",") {
		name, proto, _ := strings.Cut(e, ":")
		protocols[name] = proto
	}
	for _, l := range append(slices.Clone(listeners), ctrl...) {
		if protocols[l] == "" {
			t.Errorf("listener %s has no listener.security.protocol.map entry", l)
		}
	}
	inVoters := slices.Contains(voters, id)
	ctrlBound := slices.ContainsFunc(listeners, func(l string) bool { return slices.Contains(ctrl, l) })
	switch {
	case broker && !controller:
		if inVoters {
			t.Errorf("broker-only node %d is in controller.quorum.voters", id)
		}
		if ctrlBound {
			t.Errorf("broker-only node binds a controller listener: %v", listeners)
		}
	case controller:
		if !inVoters {
			t.Errorf("controller %d is not in controller.quorum.voters %v", id, voters)
		}
		for _, c := range ctrl {
			if !slices.Contains(listeners, c) {
				t.Errorf("controller listener %s is not in listeners %v", c, listeners)
			}
		}
		if !broker && len(listeners) != len(ctrl) {
			t.Errorf("controller-only node has listeners beside its controller listeners: %v", listeners)
		}
	default:
		t.Fatalf("process.roles %q", p["process.roles"])
	}
	if !broker {
		if p["advertised.listeners"] != "" || p["inter.broker.listener.name"] != "" {
			t.Errorf("a controller-only node sets broker listeners")
		}
		return
	}
	if len(advertised) == 0 || !slices.Contains(advertised, p["inter.broker.listener.name"]) {
		t.Errorf("inter.broker.listener.name %q is not in advertised.listeners %v", p["inter.broker.listener.name"], advertised)
	}
	for _, a := range advertised {
		if !slices.Contains(listeners, a) {
			t.Errorf("advertised listener %s is not in listeners", a)
		}
		if slices.Contains(ctrl, a) {
			t.Errorf("advertised.listeners holds the controller listener %s", a)
		}
	}
	if strings.Contains(p["advertised.listeners"], "0.0.0.0") {
		t.Errorf("advertised.listeners uses 0.0.0.0")
	}
	// TLS: a PEM key store file takes no store password (Kafka's
	// DefaultSslEngineFactory.createKeystore refuses one).
	if p["ssl.keystore.type"] != "PEM" || p["ssl.keystore.location"] == "" || p["ssl.keystore.password"] != "" ||
		p["ssl.truststore.type"] != "PEM" || p["ssl.truststore.location"] == "" {
		t.Errorf("PEM stores: %v", p)
	}
	// SASL between brokers needs its mechanism enabled; xp's inter-broker
	// listener is PLAINTEXT, which needs nothing.
	if proto := protocols[p["inter.broker.listener.name"]]; proto != "PLAINTEXT" {
		t.Errorf("inter-broker listener protocol %s: the checks above assume PLAINTEXT", proto)
	}
	// No authorizer, so the SCRAM user can be created over PLAINTEXT and
	// no super.users are needed.
	if p["authorizer.class.name"] != "" {
		t.Errorf("an authorizer is set: the SCRAM user over PLAINTEXT would need super.users")
	}
}
