package remote

import (
	"context"
	"fmt"
	"path"

	"github.com/xp-bench/xp/infra/ssh"
)

// Remove takes xp off every host: it stops what xp started there, then
// deletes the campaign's directory (the host's own, with the uploaded
// binary, its logs and files, and the client files the campaign's hosts
// share: certificates, keys, the SASL password) and xp's directory when it
// is left empty; on this machine, the cluster's authority goes. For
// machines xp only visits (a cluster someone else runs, or the hosts
// platform's machines, which outlive their group), so that nothing of xp
// stays behind.
func (d *Deployment) Remove(ctx context.Context) error {
	d.setAuthority(nil, "")
	return d.each(ctx, d.names(""), func(ctx context.Context, h *deployed) error {
		if h.dir == "" {
			return nil
		}
		c, err := d.client(ctx, h)
		if err != nil {
			return err
		}
		campaignDir := path.Dir(h.dir)
		cmd := fmt.Sprintf("%s agent stop --dir %s --grace 10s; rm -rf %s && { rmdir %s 2>/dev/null; true; }",
			ssh.Quote(h.xp), ssh.Quote(h.dir), ssh.Quote(campaignDir), ssh.Quote(path.Dir(campaignDir)))
		_, err = c.Output(ctx, cmd)
		return err
	})
}

// stopAgents stops every service xp's agent runs in the campaign's
// directory on each host that has one; the files stay.
func (d *Deployment) stopAgents(ctx context.Context) error {
	return d.each(ctx, d.names(""), func(ctx context.Context, h *deployed) error {
		if h.dir == "" {
			return nil
		}
		c, err := d.client(ctx, h)
		if err != nil {
			return err
		}
		_, err = c.Output(ctx, fmt.Sprintf("%s agent stop --dir %s --grace 10s", ssh.Quote(h.xp), ssh.Quote(h.dir)))
		return err
	})
}

// Dir is the campaign directory on host name ("" for a host the
// deployment does not have).
func (d *Deployment) Dir(name string) string {
	if h := d.hosts[name]; h != nil {
		return h.dir
	}
	return ""
}
