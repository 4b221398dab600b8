package tf

import "strings"

// ApplyError is a failed terraform apply or destroy, with Terraform's own
// message in Err.
type ApplyError struct {
	Op  string // "apply" or "destroy"
	Err error
}

func (e *ApplyError) Error() string { return e.Err.Error() }
func (e *ApplyError) Unwrap() error { return e.Err }

// Transient reports whether repeating the step may succeed: the cloud
// API throttled, was briefly unavailable or short of capacity, or the
// network failed on the way. Anything else (a bad variable, a missing
// permission, a quota) is permanent. The runner retries transient Up
// errors with backoff (target.IsTransient finds this method).
func (e *ApplyError) Transient() bool {
	msg := e.Err.Error()
	for _, s := range transientMarks {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// transientMarks are what AWS, Azure and Go's network stack say when a
// call may succeed later.
var transientMarks = []string{
	"RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequests", "Rate exceeded",
	"InsufficientInstanceCapacity", "InsufficientCapacity", "ServiceUnavailable", "InternalError",
	"AllocationFailed", "ZonalAllocationFailed", "RetryableError", "OperationNotAllowed: Operation could not be completed due to a conflict",
	"StatusCode=429", "StatusCode=503", "connection reset by peer", "i/o timeout", "TLS handshake timeout",
	"no such host",
}
