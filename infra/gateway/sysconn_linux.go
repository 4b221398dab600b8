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
// the ordinary path (syscall.Syscall) enters and leaves the scheduler's
// syscall state around it, and entering it wakes the runtime's sysmon
// thread whenever that thread is in its deep sleep (every P idle). A
// relay at a modest rate goes idle between requests, so every request
// woke sysmon, which then polled every 20 µs for another millisecond:
// profiled at 10k msg/s that was 15% of the gateway's CPU (usleep and
// futex in runtime.sysmon) and a context switch or two per request.
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
	s := &sysConn{TCPConn: tc, rc: rc}
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

func (c *sysConn) doRead(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		switch e {
		case 0:
			c.rn = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			c.rerr = e
			return true
		}
	}
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
