package kafkaproc

import (
	"encoding/binary"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"
)

// loopbackCapture records, for each TCP destination port on the loopback
// interface, the Kafka API key at the start of each segment's payload (a
// request's size, then its api key): enough to tell which requests went
// to a listener in clear. It reads raw frames (AF_PACKET, as tcpdump
// does), so the test runs as root, as the namespace-host tests do.
type loopbackCapture struct {
	fd   int
	mu   sync.Mutex
	keys map[uint16][]int16
	done chan struct{}
}

func captureLoopback(t *testing.T) *loopbackCapture {
	t.Helper()
	proto := int(htons(syscall.ETH_P_ALL))
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, proto)
	if err != nil {
		t.Fatalf("raw socket (the test needs root): %v", err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Protocol: htons(syscall.ETH_P_ALL), Ifindex: lo.Index}); err != nil {
		t.Fatal(err)
	}
	tv := syscall.NsecToTimeval(int64(200 * time.Millisecond))
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	c := &loopbackCapture{fd: fd, keys: map[uint16][]int16{}, done: make(chan struct{})}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		buf := make([]byte, 1<<16)
		for {
			select {
			case <-c.done:
				return
			default:
			}
			n, _, err := syscall.Recvfrom(fd, buf, 0)
			if err != nil || n < 14+20+20 {
				continue
			}
			c.record(buf[:n])
		}
	}()
	t.Cleanup(func() { close(c.done); <-stopped; syscall.Close(fd) })
	return c
}

// record notes the api key of an IPv4 TCP frame's payload.
func (c *loopbackCapture) record(f []byte) {
	if binary.BigEndian.Uint16(f[12:14]) != 0x0800 {
		return
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[9] != syscall.IPPROTO_TCP || len(ip) < ihl+20 {
		return
	}
	tcp := ip[ihl:]
	port := binary.BigEndian.Uint16(tcp[2:4])
	payload := tcp[int(tcp[12]>>4)*4:]
	if len(payload) < 6 {
		return
	}
	c.mu.Lock()
	c.keys[port] = append(c.keys[port], int16(binary.BigEndian.Uint16(payload[4:6])))
	c.mu.Unlock()
}

// apiKeys are the api keys seen at the start of segments to port.
func (c *loopbackCapture) apiKeys(port uint16) []int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int16(nil), c.keys[port]...)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
