package remote

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/internal/shfetch"
	"github.com/xp-bench/xp/planner"
)

// JavaPackage is the Debian/Ubuntu package installed on a client host
// with no java on PATH when a row runs client java: the one brokers get
// (kafkaconf.Install's default).
const JavaPackage = "openjdk-17-jre-headless"

// javaClientScript installs Java on a client host as the Kafka install
// script does on brokers (the distribution's package, after cloud-init,
// waiting for dpkg's lock) and prints the java version's first line.
var javaClientScript = `set -eu
sudo=
if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
if ! command -v java >/dev/null 2>&1; then
	if command -v cloud-init >/dev/null 2>&1; then cloud-init status --wait >/dev/null 2>&1 || true; fi
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout=` + fmt.Sprint(shfetch.AptLockTimeout) + `
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=` + fmt.Sprint(shfetch.AptLockTimeout) + ` ` + JavaPackage + ` >/dev/null
fi
java -version 2>&1 | head -n 1
`

// PrepareJavaClient makes every client host ready to run client java:
// Java installed as on brokers, and the Java client release archive (make
// java-client's, on this machine) uploaded into the host's campaign
// directory (skipped when the host has the same bytes; `xp loadgen` there
// checks and unpacks it into its cache once). It returns the archive's
// file name, which RunLoad's Load.JavaClient takes.
func (d *Deployment) PrepareJavaClient(ctx context.Context, archive string) (string, error) {
	if archive == "" {
		return "", errors.New("remote: client java needs the Java client release (make java-client; xp run --java-client)")
	}
	return d.uploadClientRelease(ctx, archive, "Java client", func(ctx context.Context, c *ssh.Client, h *deployed) error {
		out, err := c.Output(ctx, "sh -c "+ssh.Quote(javaClientScript))
		if err != nil {
			return fmt.Errorf("installing Java (%s): %w", JavaPackage, err)
		}
		fmt.Fprintf(d.o.Log, "remote: %s: client java on %s", h.Name, out)
		if !strings.Contains(string(out), "version") {
			return fmt.Errorf("java -version says %q", strings.TrimSpace(string(out)))
		}
		return nil
	})
}

// PrepareRdkafkaClient makes every client host ready to run client
// librdkafka: the librdkafka client release archive (make
// rdkafka-client's, on this machine: its load generator, linked with the
// librdkafka beside it, needs only glibc) uploaded into the host's campaign
// directory as PrepareJavaClient uploads Java's. It returns the archive's
// file name, which RunLoad's Load.RdkafkaClient takes.
func (d *Deployment) PrepareRdkafkaClient(ctx context.Context, archive string) (string, error) {
	if archive == "" {
		return "", errors.New("remote: client librdkafka needs the librdkafka client release (make rdkafka-client; xp run --rdkafka-client)")
	}
	return d.uploadClientRelease(ctx, archive, "librdkafka client", nil)
}

// uploadClientRelease uploads archive (a client release, what names it in
// messages) into every client host's campaign directory, then runs then
// there when not nil, on all hosts at once; it returns the archive's file
// name.
func (d *Deployment) uploadClientRelease(ctx context.Context, archive, what string, then func(context.Context, *ssh.Client, *deployed) error) (string, error) {
	name := filepath.Base(archive)
	if !campaignRE.MatchString(name) {
		return "", fmt.Errorf("remote: %s release %q: want a file name of letters, digits, '.', '_' and '-'", what, name)
	}
	clients := d.names(planner.RoleClient)
	if len(clients) == 0 {
		return "", errors.New("remote: no client host")
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, n := range clients {
		h := d.hosts[n]
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := d.uploadOn(ctx, h, archive, name, then)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("remote: %s: %s: %w", h.Name, what, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return name, errors.Join(errs...)
}

func (d *Deployment) uploadOn(ctx context.Context, h *deployed, archive, name string, then func(context.Context, *ssh.Client, *deployed) error) error {
	c, err := d.client(ctx, h)
	if err != nil {
		return err
	}
	if _, err := c.Upload(ctx, archive, path.Join(h.dir, name), 0o644); err != nil {
		return err
	}
	if then == nil {
		return nil
	}
	return then(ctx, c, h)
}
