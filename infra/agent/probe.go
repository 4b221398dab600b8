package agent

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProbeTimeout bounds one probe: connecting, the TLS handshake and the
// answer.
const ProbeTimeout = 2 * time.Second

// TCPReady returns nil once addr accepts a TCP connection (and completes a
// TLS handshake, when tlsCfg is set).
func TCPReady(ctx context.Context, addr string, tlsCfg *tls.Config) error {
	c, err := dial(ctx, addr, tlsCfg)
	if err != nil {
		return err
	}
	return c.Close()
}

// KafkaReady returns nil once addr answers a Kafka ApiVersions request (v0,
// which every Kafka broker and proxy answers before any authentication)
// with no error and at least one API, over TLS when tlsCfg is set.
func KafkaReady(ctx context.Context, addr string, tlsCfg *tls.Config) error {
	c, err := dial(ctx, addr, tlsCfg)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ProbeTimeout))
	const correlation = 0x78700001
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 0
	clientID := "xp-agent"
	msg := binary.BigEndian.AppendUint32(nil, 0) // size, set below
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Key()))
	msg = binary.BigEndian.AppendUint16(msg, uint16(req.Version))
	msg = binary.BigEndian.AppendUint32(msg, correlation)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(clientID)))
	msg = append(msg, clientID...)
	msg = req.AppendTo(msg)
	binary.BigEndian.PutUint32(msg, uint32(len(msg)-4))
	if _, err := c.Write(msg); err != nil {
		return fmt.Errorf("ApiVersions request: %w", err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return fmt.Errorf("ApiVersions answer: %w", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 1<<20 {
		return fmt.Errorf("ApiVersions answer of %d bytes: not Kafka", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c, body); err != nil {
		return fmt.Errorf("ApiVersions answer: %w", err)
	}
	if got := binary.BigEndian.Uint32(body); got != correlation {
		return fmt.Errorf("ApiVersions answer with correlation id %#x, want %#x: not Kafka", got, correlation)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(body[4:]); err != nil {
		return fmt.Errorf("ApiVersions answer: %w", err)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		return fmt.Errorf("ApiVersions answer: error code %d, %d APIs", resp.ErrorCode, len(resp.ApiKeys))
	}
	return nil
}

func dial(ctx context.Context, addr string, tlsCfg *tls.Config) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsCfg == nil {
		return c, nil
	}
	if tlsCfg.ServerName == "" {
		// Verify the address dialled, as Kafka clients do.
		host, _, _ := net.SplitHostPort(addr)
		tlsCfg = tlsCfg.Clone()
		tlsCfg.ServerName = host
	}
	tc := tls.Client(c, tlsCfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}
