package gateway

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

// sysConn is a TCP connection whose reads and writes make their system
// calls with syscall.RawSyscall through the connection's RawConn, which
// still parks the goroutine in the network poller when the socket is not
// ready (and so still honours deadlines and Close).
//
// Why: a socket is non-blocking, so a read or write returns at once; but
// the ordinary path (syscall.Syscall) enters the scheduler's syscall
// state, which wakes the runtime's sysmon thread from its deep sleep. A
// relay at a modest rate idles between requests, so each request would
// wake sysmon and pay for its polling and a context switch or two.
type sysConn struct {
	*net.TCPConn
	rc syscall.RawConn

	// A read and a write may be in progress at once, so each side has
	// its own lock, arguments and results; its callback is bound once
	// so that a call allocates nothing.
	rmu    sync.Mutex
	rbuf   []byte
	rn     int
	rerr   syscall.Errno
	readFn func(uintptr) bool
	// expect is how many more bytes the reader is sure to receive (see
	// Expect); lowat is the socket's SO_RCVLOWAT as last set.
	expect, lowat int

	wmu     sync.Mutex
	wbuf    []byte
	wn      int
	werr    syscall.Errno
	writeFn func(uintptr) bool
}

var _ net.Conn = (*sysConn)(nil)

// rawSyscalls wraps a TCP connection in a sysConn; any other connection is
// returned as it is.
func rawSyscalls(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	s := &sysConn{TCPConn: tc, rc: rc, lowat: 1}
	s.readFn, s.writeFn = s.doRead, s.doWrite
	return s
}

func (c *sysConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	c.rbuf, c.rn, c.rerr = b, 0, 0
	err := c.rc.Read(c.readFn)
	n, errno := c.rn, c.rerr
	c.rbuf = nil
	c.rmu.Unlock()
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Expect is told by the reading goroutine, between reads, how many more
// bytes it is sure to receive: the rest of a frame it has begun, as far as
// it is not buffered above (0 when the frame is done). While that is more
// than one byte, a read that finds the socket empty waits until that much
// has arrived, up to expectMax (SO_RCVLOWAT), instead of waking for every
// segment: a large frame otherwise costs a wake-up, a read that finds
// nothing and a poll per segment. It never asks for more than the peer is
// sending anyway, so no read waits longer than it would have for the
// frame's bytes; the kernel reports a socket readable regardless when
// its receive window or memory runs short, or at end of stream.
func (c *sysConn) Expect(n int) { c.expect = n }

// expectMax bounds the SO_RCVLOWAT that Expect sets: a frame of up to a
// megabyte (a produce request or fetch response at saturation) wakes its
// reader once, not once per segment. The kernel holds the bytes instead of
// the reader's buffer until then; it grows the socket's receive buffer to
// fit (up to half of net.ipv4.tcp_rmem's maximum, to which it also caps the
// value) and wakes the reader early anyway when that buffer runs short.
const expectMax = 1 << 20

func (c *sysConn) doRead(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		switch e {
		case 0:
			c.rn = int(n)
			c.expect = max(c.expect-int(n), 0)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			// About to wait: for what the reader is sure to get, or
			// (the default) for any data.
			if want := min(max(c.expect, 1), expectMax); want != c.lowat && setRcvlowat(fd, want) {
				c.lowat = want
			}
			return false
		default:
			c.rerr = e
			return true
		}
	}
}

// setRcvlowat sets the socket's SO_RCVLOWAT to n, with a raw system call
// for the reason the reads and writes use one: syscall.SetsockoptInt
// enters the scheduler's syscall state and would wake sysmon at every
// frame.
func setRcvlowat(fd uintptr, n int) bool {
	v := int32(n)
	_, _, e := syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT,
		uintptr(unsafe.Pointer(&v)), unsafe.Sizeof(v), 0)
	return e == 0
}

func (c *sysConn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.wmu.Lock()
	c.wbuf, c.wn, c.werr = b, 0, 0
	err := c.rc.Write(c.writeFn)
	n, errno := c.wn, c.werr
	c.wbuf = nil
	c.wmu.Unlock()
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

func (c *sysConn) doWrite(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&c.wbuf[c.wn])), uintptr(len(c.wbuf)-c.wn))
		switch e {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werr = e
			return true
		}
	}
	return true
}

func (c *sysConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
