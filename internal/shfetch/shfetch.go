// Package shfetch renders the POSIX sh of xp's install scripts that
// downloads a release and checks it against its published checksum before
// anything unpacks or runs it.
package shfetch

import (
	"fmt"
	"strings"
	"text/template"
)

// Download returns the lines (each starting with one tab, to sit inside
// an `if` block) that fetch url into part with curl and check part
// against sum, a hex digest of algo (sha512 or sha256). On a mismatch
// they print "what: PART from URL does not match the ALGO of the target
// file" on stderr, remove part and exit 1. url, sum and part are put in
// as they are: callers validate them (no quote in url, hex sum, part a
// shell word such as "$dir/name.part").
func Download(what, url, sum, algo, part string) (string, error) {
	if algo != "sha512" && algo != "sha256" {
		return "", fmt.Errorf("shfetch: checksum %q: want sha512 or sha256", algo)
	}
	if strings.ContainsAny(url, "'\n") {
		return "", fmt.Errorf("shfetch: url %q holds a quote or a newline", url)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\tcurl -fsSL --retry 3 -o \"%s\" '%s'\n", part, url)
	fmt.Fprintf(&b, "\techo \"%s  %s\" | %ssum -c --quiet - || {\n", sum, part, algo)
	fmt.Fprintf(&b, "\t\techo \"%s: %s from %s does not match the %s of the target file\" >&2\n", what, part, url, algo)
	fmt.Fprintf(&b, "\t\trm -f \"%s\"\n", part)
	b.WriteString("\t\texit 1\n\t}")
	return b.String(), nil
}

// AptLockTimeout is how many seconds the install scripts' apt-get waits
// for dpkg's lock held by another apt (APT's DPkg::Lock::Timeout), as the
// unattended upgrades of a machine that just booted hold it.
const AptLockTimeout = 600

// Funcs are the template functions of install scripts: {{download WHAT
// URL SUM ALGO PART}} is Download, {{aptLockTimeout}} AptLockTimeout.
var Funcs = template.FuncMap{"download": Download, "aptLockTimeout": func() int { return AptLockTimeout }}
