package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/parosdb/paros/security"
)

// makeCreds makes a secure cell's credentials under dir with the shipped
// commands, as an operator would: `paros cert ca`, `paros cert node` per
// member, per replica and per proxy (127.0.0.1, the address clients and
// peers dial),
// and two `paros cert token`s over every journal: an admin token for cell
// formation, a read/write token for the load generator.
func (s *parosSys) makeCreds(ctx context.Context, dir string) (*parosCreds, error) {
	caDir := filepath.Join(dir, "ca")
	c := &parosCreds{caFile: filepath.Join(caDir, security.CACertFile)}
	if _, err := s.cert(ctx, "ca", "--dir", caDir, "--name", "bench"); err != nil {
		return nil, err
	}
	for i := range 3 + s.replicas + s.proxies {
		nd := filepath.Join(dir, fmt.Sprintf("m%d", i+1))
		if i >= 3+s.replicas {
			nd = filepath.Join(dir, fmt.Sprintf("p%d", i-2-s.replicas))
		} else if i >= 3 {
			nd = filepath.Join(dir, fmt.Sprintf("r%d", i-2))
		}
		if _, err := s.cert(ctx, "node", "--ca", caDir, "--out", nd, "--host", "127.0.0.1"); err != nil {
			return nil, err
		}
		c.nodeDirs = append(c.nodeDirs, nd)
	}
	var err error
	if c.admin, err = s.cert(ctx, "token", "--ca", caDir, "--subject", "bench admin", "--all", "--ops", "read,write,admin", "--ttl", "24h"); err != nil {
		return nil, err
	}
	if c.client, err = s.cert(ctx, "token", "--ca", caDir, "--subject", "bench load", "--all", "--ops", "read,write", "--ttl", "24h"); err != nil {
		return nil, err
	}
	return c, nil
}

// cert runs `paros cert ARGS…` and returns its standard output, trimmed.
func (s *parosSys) cert(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"cert"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("paros cert %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}
