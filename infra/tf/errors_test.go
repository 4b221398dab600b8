package tf

import (
	"errors"
	"testing"
)

func TestApplyErrorTransient(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want bool
	}{
		{name: "aws throttled", msg: "Error: creating EC2 Instance: operation error EC2: RunInstances, api error RequestLimitExceeded: Request limit exceeded.", want: true},
		{name: "aws capacity", msg: "api error InsufficientInstanceCapacity: We currently do not have sufficient m5.xlarge capacity", want: true},
		{name: "azure allocation", msg: "Code=\"AllocationFailed\" Message=\"Allocation failed.\"", want: true},
		{name: "network", msg: "dial tcp: lookup ec2.eu-west-1.amazonaws.com: i/o timeout", want: true},
		{name: "bad variable", msg: "Error: Invalid value for variable: Every machine's role must be broker, controller, gateway or client."},
		{name: "no permission", msg: "api error UnauthorizedOperation: You are not authorized to perform this operation."},
		{name: "quota", msg: "api error VcpuLimitExceeded: You have requested more vCPU capacity than your current vCPU limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&ApplyError{Op: "apply", Err: errors.New(tc.msg)}).Transient(); got != tc.want {
				t.Fatalf("Transient() = %v, want %v", got, tc.want)
			}
		})
	}
}
