//go:build !linux

package gateway

import "net"

// rawSyscalls is the identity outside Linux (see sysconn_linux.go).
func rawSyscalls(c net.Conn) net.Conn { return c }
