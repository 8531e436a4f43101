package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
)

// The cert commands are the operator's side of the cell's PKI (package
// security): a CA, a certificate per machine, tokens for clients.
//
//	paros cert ca    --dir DIR                       ca.crt, ca.key (0600)
//	paros cert node  --ca DIR --out DIR2 --host H,…  ca.crt, node.crt, node.key (0600); prints the node id
//	paros cert token --ca DIR --subject NAME (--all | --tenant HEX | --journal T/J) --ops read,write,admin [--ttl 720h]
//
// None overwrites a key: a CA or a machine's key replaced by mistake would
// orphan every certificate or record made with the old one.

// tokenTTLDefault is the default lifetime of a token.
const tokenTTLDefault = 720 * time.Hour

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		cmd := &cobra.Command{
			Use:   "cert",
			Short: "make the cell's CA, machine certificates and client tokens",
			Long: `cert makes the credentials of a cell. The CA (ca.crt, ca.key) stays with the
operator; each machine gets ca.crt, node.crt and node.key (serve --tls DIR);
clients get ca.crt and a token (parosctl --ca, --token).`,
		}
		cmd.AddCommand(certCACmd(), certNodeCmd(), certTokenCmd())
		return cmd
	})
}

func certCACmd() *cobra.Command {
	var dir, name string
	cmd := &cobra.Command{
		Use:     "ca --dir DIR",
		Short:   "make a cell's CA: DIR/ca.crt and DIR/ca.key (refuses to overwrite)",
		Example: `  paros cert ca --dir ./ca`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return exitError{exitBadConfig, errors.New("--dir is required")}
			}
			if err := refuseExisting(dir, security.CACertFile, security.CAKeyFile); err != nil {
				return err
			}
			ca, err := security.NewCA(name)
			if err != nil {
				return err
			}
			if err := ca.WriteCA(dir); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "CA written: %s (every machine and client), %s (keep it off the machines)\n",
				filepath.Join(dir, security.CACertFile), filepath.Join(dir, security.CAKeyFile))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write ca.crt and ca.key into")
	cmd.Flags().StringVar(&name, "name", "paros", "name in the CA certificate's subject")
	return cmd
}

func certNodeCmd() *cobra.Command {
	var caDir, out, hosts, nodeID string
	cmd := &cobra.Command{
		Use:   "node --ca DIR --out DIR2 --host H[,H...] [--node-id HEX]",
		Short: "issue a machine's certificate into DIR2 (ca.crt, node.crt, node.key); prints its node id",
		Example: `  paros cert node --ca ./ca --out ./m1 --host 10.0.0.1,m1.example.com
  paros cert node --ca ./ca --out ./m1 --host 10.0.0.1 --node-id 45268c5f7b543a99   # renew, same identity`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if caDir == "" || out == "" || hosts == "" {
				return exitError{exitBadConfig, errors.New("--ca, --out and --host are required")}
			}
			id := security.RandomNodeID()
			if nodeID != "" {
				var err error
				if id, err = parseNodeID(nodeID); err != nil {
					return err
				}
			}
			cert, key, err := issueNode(caDir, out, id, strings.Split(hosts, ","))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s, %s, %s\n", filepath.Join(out, security.CACertFile), cert, key)
			fmt.Fprintf(cmd.OutOrStdout(), "%016x\n", id)
			return nil
		},
	}
	cmd.Flags().StringVar(&caDir, "ca", "", "the CA's directory (ca.crt, ca.key)")
	cmd.Flags().StringVar(&out, "out", "", "directory to write the machine's credentials into")
	cmd.Flags().StringVar(&hosts, "host", "", "comma-separated IP addresses or DNS names clients and peers dial")
	cmd.Flags().StringVar(&nodeID, "node-id", "", "node id in hex (default: a random one; give the record's to keep a machine's identity)")
	return cmd
}

func certTokenCmd() *cobra.Command {
	var caDir, subject, tenant, jref, ops string
	var all bool
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "token --ca DIR --subject NAME (--all | --tenant HEX | --journal TENANT/JOURNAL) --ops read,write,admin [--ttl 720h]",
		Short: "issue a client's token; prints it",
		Example: `  paros cert token --ca ./ca --subject ops --all --ops read,write,admin
  paros cert token --ca ./ca --subject shop-app --tenant 5f93337a7f7eeb4c --ops read,write --ttl 24h`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if caDir == "" || subject == "" || ops == "" {
				return exitError{exitBadConfig, errors.New("--ca, --subject and --ops are required")}
			}
			scope, err := parseScope(all, tenant, jref)
			if err != nil {
				return err
			}
			if scope.Ops, err = security.ParseOps(ops); err != nil {
				return exitError{exitBadConfig, err}
			}
			if ttl <= 0 {
				return exitError{exitBadConfig, errors.New("--ttl must be positive")}
			}
			tok, err := issueToken(caDir, subject, scope, ttl)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			return nil
		},
	}
	cmd.Flags().StringVar(&caDir, "ca", "", "the CA's directory (ca.crt, ca.key)")
	cmd.Flags().StringVar(&subject, "subject", "", "who holds the token (logged by the servers)")
	cmd.Flags().BoolVar(&all, "all", false, "scope: every journal (admin calls need it)")
	cmd.Flags().StringVar(&tenant, "tenant", "", "scope: every journal of this tenant (hex)")
	cmd.Flags().StringVar(&jref, "journal", "", "scope: one journal, TENANT/JOURNAL in hex")
	cmd.Flags().StringVar(&ops, "ops", "", "operations granted: read, write, admin (comma-separated)")
	cmd.Flags().DurationVar(&ttl, "ttl", tokenTTLDefault, "lifetime")
	return cmd
}

// parseNodeID reads a node id in hex: not 0, below 2^63 (as machine records
// keep them).
func parseNodeID(s string) (uint64, error) {
	id, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil || id == 0 || id >= 1<<63 {
		return 0, exitError{exitBadConfig, fmt.Errorf("--node-id %q: want hex, not 0, below 2^63", s)}
	}
	return id, nil
}

// parseScope reads exactly one of --all, --tenant, --journal.
func parseScope(all bool, tenant, jref string) (security.Scope, error) {
	n := 0
	for _, set := range []bool{all, tenant != "", jref != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return security.Scope{}, exitError{exitBadConfig, errors.New("give exactly one of --all, --tenant HEX, --journal TENANT/JOURNAL")}
	}
	switch {
	case tenant != "":
		t, err := strconv.ParseUint(tenant, 16, 64)
		if err != nil || t == 0 {
			return security.Scope{}, exitError{exitBadConfig, fmt.Errorf("--tenant %q: want a non-zero hex id", tenant)}
		}
		return security.Scope{Tenant: t}, nil
	case jref != "":
		id, err := journal.ParseID(jref)
		if err != nil {
			return security.Scope{}, exitError{exitBadConfig, fmt.Errorf("--journal %q: %w", jref, err)}
		}
		return security.Scope{Tenant: id.Tenant, Journal: id.Journal}, nil
	}
	return security.Scope{}, nil
}

// refuseExisting fails when any of names exists in dir.
func refuseExisting(dir string, names ...string) error {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err == nil {
			return exitError{exitBadConfig, fmt.Errorf("%s exists: refusing to overwrite it", p)}
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// loadIssuer reads the CA with its key from dir.
func loadIssuer(dir string) (*security.CA, error) {
	ca, err := security.LoadCA(dir)
	if err != nil {
		return nil, exitError{exitBadConfig, fmt.Errorf("the CA in %s: %w", dir, err)}
	}
	if ca.Key == nil {
		return nil, exitError{exitBadConfig, fmt.Errorf("%s holds no %s: issuing needs the CA key", dir, security.CAKeyFile)}
	}
	return ca, nil
}

// issueNode writes machine id's credentials into out: ca.crt (without the
// key), node.crt and node.key (0600). It refuses to overwrite them, and to
// write into the CA's own directory (a machine never holds ca.key). It
// returns the paths of the certificate and key.
func issueNode(caDir, out string, id uint64, hosts []string) (certPath, keyPath string, err error) {
	ca, err := loadIssuer(caDir)
	if err != nil {
		return "", "", err
	}
	if _, err := os.Stat(filepath.Join(out, security.CAKeyFile)); err == nil {
		return "", "", exitError{exitBadConfig, fmt.Errorf("%s holds %s: a machine's credentials never sit beside the CA key", out, security.CAKeyFile)}
	}
	if err := refuseExisting(out, security.CACertFile, security.NodeCertFile, security.NodeKeyFile); err != nil {
		return "", "", err
	}
	certPEM, keyPEM, err := ca.IssueNode(id, hosts)
	if err != nil {
		return "", "", exitError{exitBadConfig, err}
	}
	if err := (&security.CA{Cert: ca.Cert}).WriteCA(out); err != nil {
		return "", "", err
	}
	certPath, keyPath = filepath.Join(out, security.NodeCertFile), filepath.Join(out, security.NodeKeyFile)
	if err := writeNew(certPath, certPEM, 0o644); err != nil {
		return "", "", err
	}
	if err := writeNew(keyPath, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// issueToken signs a token for subject over one scope, valid for ttl.
func issueToken(caDir, subject string, scope security.Scope, ttl time.Duration) (string, error) {
	ca, err := loadIssuer(caDir)
	if err != nil {
		return "", err
	}
	now := time.Now()
	tok, err := ca.IssueToken(security.Claims{Subject: subject, Scopes: []security.Scope{scope},
		IssuedAt: now.Unix(), Expires: now.Add(ttl).Unix()})
	if err != nil {
		return "", exitError{exitBadConfig, err}
	}
	return tok, nil
}

// writeNew creates path with perm, failing if it exists.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
