package existing

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
)

// Bounds of the checks before the first row.
const (
	// verifyTimeout bounds reaching one endpoint and reading its metadata
	// and every broker's API versions.
	verifyTimeout = 30 * time.Second
	// probeTimeout bounds one probe that should go unanswered (a plaintext
	// request to a TLS port, a request without a client certificate or
	// SASL): connecting, the handshake and the answer.
	probeTimeout = 3 * time.Second
)

// Cluster is what the checks before the first row found: the cluster
// behind the direct endpoints (or the gateways, when the rows use only
// gateway modes).
type Cluster struct {
	ID         string   `json:"cluster_id"`
	Controller int32    `json:"controller"`
	Brokers    []Broker `json:"brokers"`
	// VersionGuess is the Kafka release the brokers' API versions match
	// (franz-go's kversion), e.g. "v3.9"; it cannot name a patch release.
	VersionGuess string `json:"kafka_version_guess"`
	// From is the endpoint the cluster was read through.
	From      string                  `json:"from"`
	Endpoints map[string]EndpointInfo `json:"endpoints"`
	// TopicPrefix is where xp's topics live.
	TopicPrefix string `json:"topic_prefix"`
}

// Broker is one broker as the metadata names it.
type Broker struct {
	ID      int32  `json:"id"`
	Name    string `json:"name"`
	Address string `json:"address"`
	Rack    string `json:"rack,omitempty"`
}

// broker is the provenance every attempt records: the cluster's id, its
// brokers' ids and the release their API versions match, a guess.
func (c *Cluster) broker() target.Broker {
	b := target.Broker{Kind: target.BrokerExisting, Version: c.VersionGuess, VersionGuessed: true, ClusterID: c.ID}
	for _, br := range c.Brokers {
		b.BrokerIDs = append(b.BrokerIDs, br.ID)
	}
	return b
}

// EndpointInfo is what the checks found of one endpoint.
type EndpointInfo struct {
	Bootstrap []string `json:"bootstrap"`
	// Dialect and Protocol are the client config's.
	Dialect   string `json:"dialect"`
	Protocol  string `json:"security_protocol"`
	Mechanism string `json:"sasl_mechanism,omitempty"`
	// TLS is the version and cipher suite the first broker negotiated.
	TLS string `json:"tls,omitempty"`
	// ServerCert is the subject of the certificate the first broker
	// presented.
	ServerCert string  `json:"server_certificate,omitempty"`
	ClusterID  string  `json:"cluster_id"`
	Brokers    []int32 `json:"brokers"`
	// Addresses are the brokers' addresses, by id, as this endpoint's
	// metadata advertises them: its listener's, or its gateway's.
	Addresses    map[int32]string `json:"addresses"`
	VersionGuess string           `json:"kafka_version_guess"`
	// Checks are the checks of its security that passed.
	Checks []string `json:"checks"`
}

// Preflight reaches every endpoint the rows use and verifies its
// security, reads the cluster's brokers and version, refuses rows whose
// brokers differ from the cluster's, and refuses to start while topics
// under topic_prefix exist that events (the campaign's db) does not
// record (target.Preflighter).
func (t *Target) Preflight(ctx context.Context, rows []planner.Row, events target.InfraEvents) (target.PreflightReport, error) {
	used := map[string]bool{}
	for i := range rows {
		used[target.ModeKey(&rows[i])] = true
	}
	modes := slices.Sorted(maps.Keys(used))
	infos := make([]EndpointInfo, len(modes))
	errs := make([]error, len(modes))
	var wg sync.WaitGroup
	for i, mode := range modes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos[i], errs[i] = t.verify(ctx, mode)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return target.PreflightReport{}, err
	}
	c := &Cluster{Endpoints: map[string]EndpointInfo{}, TopicPrefix: t.file.Existing.TopicPrefix}
	for i, mode := range modes {
		c.Endpoints[mode] = infos[i]
	}
	// The cluster is what the direct endpoints reach; they must agree.
	var direct []string
	for _, m := range modes {
		if !planner.NeedsGateway(m) {
			direct = append(direct, m)
		}
	}
	from := direct
	if len(from) == 0 {
		from = modes
	}
	first := c.Endpoints[from[0]]
	for _, m := range direct[min(1, len(direct)):] {
		if e := c.Endpoints[m]; e.ClusterID != first.ClusterID || !slices.Equal(e.Brokers, first.Brokers) {
			return target.PreflightReport{}, fmt.Errorf("endpoints %s and %s (%s) reach different clusters: %s with brokers %v, %s with brokers %v",
				from[0], m, t.cfg.Path, first.ClusterID, first.Brokers, e.ClusterID, e.Brokers)
		}
	}
	meta, err := t.metadata(ctx, from[0])
	if err != nil {
		return target.PreflightReport{}, err
	}
	c.ID, c.Controller, c.From, c.VersionGuess = first.ClusterID, meta.Controller, from[0], first.VersionGuess
	for _, b := range meta.Brokers {
		br := Broker{ID: b.NodeID, Name: fmt.Sprintf("broker-%d", b.NodeID), Address: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))}
		if b.Rack != nil {
			br.Rack = *b.Rack
		}
		c.Brokers = append(c.Brokers, br)
	}
	if err := t.checkBrokers(rows, c); err != nil {
		return target.PreflightReport{}, err
	}
	if err := t.checkTopics(ctx, from[0], events); err != nil {
		return target.PreflightReport{}, err
	}
	t.mu.Lock()
	t.cluster = c
	t.mu.Unlock()
	out, _ := json.Marshal(c)
	rep := target.PreflightReport{Outputs: out, Summary: []string{fmt.Sprintf("cluster %s of %s: %d brokers (ids %s), Kafka %s by its API versions; topics under %q",
		c.ID, t.cfg.Path, len(c.Brokers), brokerIDs(c.Brokers), c.VersionGuess, c.TopicPrefix)}}
	for _, m := range modes {
		e := c.Endpoints[m]
		rep.Summary = append(rep.Summary, fmt.Sprintf("endpoint %s (%s): %s", m, strings.Join(e.Bootstrap, ","), strings.Join(e.Checks, "; ")))
	}
	rep.Summary = append(rep.Summary, versionWarnings(rows, c.VersionGuess)...)
	return rep, nil
}

// versionWarnings names the kafka_version of rows that the brokers' API
// versions contradict: the rows record a release the cluster does not run.
// Only a warning, as API versions cannot tell every release apart.
func versionWarnings(rows []planner.Row, guess string) []string {
	if !strings.HasPrefix(guess, "v") {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		v := r.KafkaVersion
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		parts := strings.SplitN(v, ".", 3)
		if len(parts) >= 2 && "v"+parts[0]+"."+parts[1] != guess {
			out = append(out, fmt.Sprintf("warning: rows record kafka_version %s but the brokers' API versions are those of Kafka %s: "+
				"set kafka_version in the spec to the release the cluster runs", v, guess))
		}
	}
	return out
}

func brokerIDs(bs []Broker) string {
	var s []string
	for _, b := range bs {
		s = append(s, strconv.Itoa(int(b.ID)))
	}
	return strings.Join(s, ",")
}

// checkBrokers refuses rows whose brokers differ from the cluster's,
// naming both numbers.
func (t *Target) checkBrokers(rows []planner.Row, c *Cluster) error {
	wrong := map[int][]string{}
	for _, r := range rows {
		if r.Brokers != len(c.Brokers) {
			wrong[r.Brokers] = append(wrong[r.Brokers], r.Run)
		}
	}
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(wrong)) {
		errs = append(errs, fmt.Errorf("%d rows (e.g. %s) have brokers %d but the cluster of %s has %d brokers (ids %s, read through endpoint %s): "+
			"set brokers: %d in the spec", len(wrong[n]), wrong[n][0], n, t.cfg.Path, len(c.Brokers), brokerIDs(c.Brokers), c.From, len(c.Brokers)))
	}
	return errors.Join(errs...)
}

// client is a franz-go client of mode's endpoint.
func (t *Target) client(mode string, extra ...kgo.Opt) (*kgo.Client, error) {
	props := t.clients[mode].Map()
	props[kafkaconf.BootstrapServers] = strings.Join(t.file.Existing.Endpoints[mode].Bootstrap, ",")
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(append(append(opts, kgo.ClientID("xp-existing"), kgo.RequestRetries(2)), extra...)...)
}

// metadata reads the brokers through mode's endpoint.
func (t *Target) metadata(ctx context.Context, mode string) (kadm.Metadata, error) {
	cl, err := t.client(mode)
	if err != nil {
		return kadm.Metadata{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	return kadm.NewClient(cl).BrokerMetadata(ctx)
}

// verify reaches mode's endpoint with its client config and checks that it
// is what its name says.
func (t *Target) verify(ctx context.Context, mode string) (EndpointInfo, error) {
	ep := t.file.Existing.Endpoints[mode]
	cf := t.clients[mode]
	props := cf.Map()
	info := EndpointInfo{Bootstrap: ep.Bootstrap, Dialect: cf.Dialect, Protocol: strings.ToUpper(kafkaconf.Protocol(props))}
	fail := func(format string, a ...any) (EndpointInfo, error) {
		return info, fmt.Errorf("endpoints.%s (%s:%d, client config %s): %s", mode, t.cfg.Path, ep.Line, cf.Path, fmt.Sprintf(format, a...))
	}
	transport := targetfile.ModeTransport(mode)
	tcfg, err := kafkaconf.TLSConfig(props)
	if err != nil {
		return fail("%v", err)
	}
	// A TLS endpoint must not answer plaintext: a port that does is no
	// TLS listener, whatever the config says.
	if transport != planner.SecurityPlaintext {
		for _, addr := range ep.Bootstrap {
			if answersPlaintext(ctx, addr) {
				return fail("%s answers Kafka requests in plaintext: it is no TLS listener, so it cannot serve %s (is the port right?)", addr, transport)
			}
		}
		info.Checks = append(info.Checks, "no plaintext answer")
		addr := ep.Bootstrap[0]
		cs, err := handshake(ctx, addr, tcfg)
		if err != nil {
			return fail("TLS with %s: %v", addr, err)
		}
		info.TLS = tls.VersionName(cs.Version) + " " + tls.CipherSuiteName(cs.CipherSuite)
		if len(cs.PeerCertificates) > 0 {
			info.ServerCert = cs.PeerCertificates[0].Subject.String()
		}
		info.Checks = append(info.Checks, "TLS handshake verified ("+info.TLS+")")
		if transport == planner.SecurityMTLS {
			bare := tcfg.Clone()
			bare.Certificates, bare.GetClientCertificate = nil, nil
			if answers(ctx, addr, bare, apiVersions()) {
				return fail("%s answers a client without a certificate: it does not require one, so it is tls, not mtls", addr)
			}
			info.Checks = append(info.Checks, "client certificate required")
		}
		if transport == planner.SecuritySASLSSL {
			if answers(ctx, addr, tcfg, metadataRequest()) {
				return fail("%s answers a Metadata request without SASL authentication: it is not a SASL listener", addr)
			}
			info.Mechanism = strings.ToUpper(props[kafkaconf.SASLMechanism])
			info.Checks = append(info.Checks, "SASL required before any request")
		}
	}
	cl, err := t.client(mode)
	if err != nil {
		return fail("%v", err)
	}
	defer cl.Close()
	vctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	adm := kadm.NewClient(cl)
	meta, err := adm.BrokerMetadata(vctx)
	if err != nil {
		return fail("not reached: %v", err)
	}
	if len(meta.Brokers) == 0 {
		return fail("its metadata lists no broker")
	}
	info.ClusterID = meta.Cluster
	info.Brokers = meta.Brokers.NodeIDs()
	info.Addresses = map[int32]string{}
	for _, b := range meta.Brokers {
		info.Addresses[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	sort.Slice(info.Brokers, func(i, j int) bool { return info.Brokers[i] < info.Brokers[j] })
	vs, err := adm.ApiVersions(vctx)
	if err != nil {
		return fail("API versions: %v", err)
	}
	guesses := map[string]bool{}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			return fail("broker %d (as its metadata advertises it) not reached: %v", v.NodeID, v.Err)
		}
		guesses[v.VersionGuess()] = true
	}
	info.VersionGuess = strings.Join(slices.Sorted(maps.Keys(guesses)), " and ")
	what := "metadata and API versions of every broker read"
	if transport == planner.SecuritySASLSSL {
		what = "SASL " + info.Mechanism + " login, " + what
	}
	info.Checks = append(info.Checks, what)
	return info, nil
}

// handshake makes a TLS connection to addr and returns its state.
func handshake(ctx context.Context, addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	c, err := dialProbe(ctx, addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	return c.(*tls.Conn).ConnectionState(), nil
}

// answersPlaintext reports whether addr answers an ApiVersions request
// sent in plaintext.
func answersPlaintext(ctx context.Context, addr string) bool {
	return answers(ctx, addr, nil, apiVersions())
}

func apiVersions() kmsg.Request {
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = 0
	return r
}

// metadataRequest asks for the brokers only, at a version every Kafka
// from 1.0 to 4.x serves.
func metadataRequest() kmsg.Request {
	r := kmsg.NewPtrMetadataRequest()
	r.Version = 4
	r.Topics = []kmsg.MetadataRequestTopic{}
	return r
}

// answers reports whether addr, over TLS with cfg when set, answers req
// on a connection without any authentication within probeTimeout.
func answers(ctx context.Context, addr string, cfg *tls.Config, req kmsg.Request) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := dialProbe(ctx, addr, cfg)
	if err != nil {
		return false
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	const correlation = 0x78700002
	clientID := "xp-existing-probe"
	msg := binary.BigEndian.AppendUint32(nil, 0)
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.GetVersion()))
	msg = binary.BigEndian.AppendUint32(msg, correlation)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(clientID)))
	msg = append(msg, clientID...)
	msg = req.AppendTo(msg)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))
	if _, err := c.Write(msg); err != nil {
		return false
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return false
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<24 {
		return false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return false
	}
	if binary.BigEndian.Uint32(body) != correlation {
		return false
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp.ReadFrom(body[4:]) == nil
}

// dialProbe connects to addr, over TLS with cfg when set (verifying the
// host dialled unless cfg names one).
func dialProbe(ctx context.Context, addr string, cfg *tls.Config) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return c, nil
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		cfg.ServerName = host
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return tc, nil
}
