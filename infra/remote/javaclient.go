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
	name := filepath.Base(archive)
	if !campaignRE.MatchString(name) {
		return "", fmt.Errorf("remote: Java client release %q: want a file name of letters, digits, '.', '_' and '-'", name)
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
			err := d.prepareJavaOn(ctx, h, archive, name)
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("remote: %s: Java client: %w", h.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return name, errors.Join(errs...)
}

func (d *Deployment) prepareJavaOn(ctx context.Context, h *deployed, archive, name string) error {
	c, err := d.client(ctx, h)
	if err != nil {
		return err
	}
	if _, err := c.Upload(ctx, archive, path.Join(h.dir, name), 0o644); err != nil {
		return err
	}
	out, err := c.Output(ctx, "sh -c "+ssh.Quote(javaClientScript))
	if err != nil {
		return fmt.Errorf("installing Java (%s): %w", JavaPackage, err)
	}
	fmt.Fprintf(d.o.Log, "remote: %s: client java on %s", h.Name, out)
	if !strings.Contains(string(out), "version") {
		return fmt.Errorf("java -version says %q", strings.TrimSpace(string(out)))
	}
	return nil
}
