package tlsrec

import (
	"fmt"
	"strconv"
)

// Alert is a TLS alert description (RFC 8446 §6).
type Alert uint8

// The alerts the record layer sends or names.
const (
	AlertCloseNotify         Alert = 0
	AlertUnexpectedMessage   Alert = 10
	AlertBadRecordMAC        Alert = 20
	AlertRecordOverflow      Alert = 22
	AlertHandshakeFailure    Alert = 40
	AlertBadCertificate      Alert = 42
	AlertCertificateExpired  Alert = 45
	AlertIllegalParameter    Alert = 47
	AlertUnknownCA           Alert = 48
	AlertDecodeError         Alert = 50
	AlertDecryptError        Alert = 51
	AlertProtocolVersion     Alert = 70
	AlertInternalError       Alert = 80
	AlertUserCanceled        Alert = 90
	AlertCertificateRequired Alert = 116
)

var alertNames = map[Alert]string{
	AlertCloseNotify:         "close_notify",
	AlertUnexpectedMessage:   "unexpected_message",
	AlertBadRecordMAC:        "bad_record_mac",
	AlertRecordOverflow:      "record_overflow",
	AlertHandshakeFailure:    "handshake_failure",
	AlertBadCertificate:      "bad_certificate",
	AlertCertificateExpired:  "certificate_expired",
	AlertIllegalParameter:    "illegal_parameter",
	AlertUnknownCA:           "unknown_ca",
	AlertDecodeError:         "decode_error",
	AlertDecryptError:        "decrypt_error",
	AlertProtocolVersion:     "protocol_version",
	AlertInternalError:       "internal_error",
	AlertUserCanceled:        "user_canceled",
	AlertCertificateRequired: "certificate_required",
}

func (a Alert) String() string {
	if s, ok := alertNames[a]; ok {
		return s
	}
	return "alert(" + strconv.Itoa(int(a)) + ")"
}

// RemoteAlertError is the error Read returns after the peer sent an alert
// other than close_notify.
type RemoteAlertError struct {
	Alert Alert
}

func (e *RemoteAlertError) Error() string {
	return "tlsrec: peer sent alert " + e.Alert.String()
}

// ProtocolError is the error Read returns when the peer broke the record
// protocol (a record that fails authentication, is too long, or carries
// something out of place). Alert is what was sent to the peer about it.
type ProtocolError struct {
	Alert Alert
	Msg   string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("tlsrec: %s (%s)", e.Msg, e.Alert)
}
