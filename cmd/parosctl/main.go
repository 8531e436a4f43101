// Command parosctl is paros's operator and client CLI.
//
//	parosctl [--ca FILE --token TOKEN | --insecure] --servers a,b,c init --members a,b,c [--journals N] [--plain]
//	parosctl --servers a,b,c write TENANT/JOURNAL rec1 rec2 [--leader U] [--seq N] [--multi]
//	parosctl --servers a,b,c read TENANT/JOURNAL [--from N] [--limit N] [--wait-ms N]
//	parosctl --servers a,b,c tail -f TENANT/JOURNAL [--from N]
//	parosctl --servers a,b,c truncate TENANT/JOURNAL --up-to N [--leader U] [--multi]
//	parosctl --servers a,b,c set-leader TENANT/JOURNAL [--new U] [--old U|none]
//	parosctl --servers a,b,c inspect [--journal TENANT/JOURNAL]
//	parosctl --servers a,b,c reconfigure TENANT/JOURNAL --members ID,ID,HOST:PORT [--quorum majority|flexible:Q1:Q2|grid:RxC] [--keep-matchmakers] [--wait D]
//	parosctl --servers a,b,c retire --journal TENANT/JOURNAL --node ID --gc-watermark R.N
//	parosctl --servers a,b,c replicas set HOST:PORT,HOST:PORT|none [--wait D]
//	parosctl --servers a,b,c handoff TENANT/JOURNAL [--to ID] [--wait D]
//	parosctl --servers a,b,c matchmakers set ID,ID,HOST:PORT [--wait D]
//
// Every command dials over TLS trusting the cell's CA certificate (--ca, or
// PAROSCTL_CA) and presents a token (--token, or PAROSCTL_TOKEN; init needs
// one with admin over every journal). --insecure (or PAROSCTL_INSECURE=1)
// dials plaintext and sends no token, for a cell served with --insecure;
// with neither --ca nor --insecure parosctl refuses to run (exit 2).
// `paros dev` writes these variables into DIR/parosctl.env.
//
// Exit codes: 0 ok, 1 no server reachable, 2 bad arguments, 3 refused or
// not served (the credentials too), 4 ambiguous (the call may still take
// effect).
//
// The data-plane and inspect commands go through package client only: one
// client.Dial per invocation, then the Journal handle's raw calls (which
// follow redirects, ask other servers and back off), a Reader, or
// Client.Inspect. parosctl itself never retries. reconfigure and retire go
// through Client.Reconfigure and Client.Retire, replicas set through
// Client.SetReplicas, proxies set through Client.SetProxies, handoff
// through Client.Handoff, matchmakers set through Client.SetMatchmakers
// (each reaches every machine of the cell). init
// talks to the Machine service (cell formation), which the client library
// does not cover.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/security"
)

const defaultTimeout = 5 * time.Second

const (
	exitOK          = 0
	exitUnreachable = 1
	exitBadArgs     = 2
	exitRefused     = 3
	exitAmbiguous   = 4
)

type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

func fail(code int, format string, args ...any) error {
	return exitError{code, fmt.Errorf(format, args...)}
}

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		code := exitBadArgs
		var ee exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		fmt.Fprintln(os.Stderr, "parosctl:", err)
		os.Exit(code)
	}
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "parosctl",
		Short:         "operate and use a paros cell",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.servers, "servers", os.Getenv("PAROSCTL_SERVERS"), "comma-separated server addresses (or PAROSCTL_SERVERS)")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print JSON")
	root.PersistentFlags().DurationVar(&g.timeout, "timeout", defaultTimeout, "per-call timeout")
	root.PersistentFlags().StringVar(&g.ca, "ca", os.Getenv("PAROSCTL_CA"), "the cell's CA certificate, ca.crt (or PAROSCTL_CA): dial over TLS")
	// The token's default is read at run time, not shown in --help.
	root.PersistentFlags().StringVar(&g.token, "token", "", "bearer token from 'paros cert token' (default: PAROSCTL_TOKEN)")
	insecureEnv, _ := strconv.ParseBool(os.Getenv("PAROSCTL_INSECURE"))
	root.PersistentFlags().BoolVar(&g.insecure, "insecure", insecureEnv, "plaintext, no token: a cell served with --insecure (or PAROSCTL_INSECURE=1)")
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		g.caFlag, g.tokenFlag = cmd.Flags().Changed("ca"), cmd.Flags().Changed("token")
		if !g.tokenFlag {
			g.token = os.Getenv("PAROSCTL_TOKEN")
		}
		resolveName = resolveWith(g)
	}
	root.AddCommand(initCmd(g), writeCmd(g), readCmd(g), tailCmd(g), truncateCmd(g), setLeaderCmd(g), inspectCmd(g),
		reconfigureCmd(g), retireCmd(g), replicasCmd(g), proxiesCmd(g), handoffCmd(g), matchmakersCmd(g),
		journalCmd(g), tenantCmd(g), cellCmd(g))
	return root
}

// globals are the root command's flags.
type globals struct {
	servers  string
	json     bool
	timeout  time.Duration
	ca       string
	token    string
	insecure bool
	// caFlag and tokenFlag: --ca and --token were given on the command
	// line (not taken from the environment).
	caFlag, tokenFlag bool
}

// security is how the invocation reaches the cell: the TLS configuration
// (nil: plaintext, --insecure) and the token ("" sends none).
func (g *globals) security() (*tls.Config, string, error) {
	if g.insecure {
		if g.caFlag || g.tokenFlag {
			return nil, "", fail(exitBadArgs, "--insecure dials plaintext and sends no token: drop --ca and --token, or --insecure")
		}
		return nil, "", nil
	}
	if g.ca == "" {
		return nil, "", fail(exitBadArgs, "no CA: set PAROSCTL_CA (or pass --ca FILE) to the cell's ca.crt, "+
			"or pass --insecure for a cell served with --insecure")
	}
	cfg, err := security.ClientConfigFile(g.ca)
	if err != nil {
		return nil, "", fail(exitBadArgs, "CA %s: %v", g.ca, err)
	}
	return cfg, strings.TrimSpace(g.token), nil
}

// clientOptions are the client.Dial options of g.security.
func (g *globals) clientOptions() ([]client.Option, error) {
	cfg, token, err := g.security()
	if err != nil || cfg == nil {
		return nil, err
	}
	opts := []client.Option{client.WithTLS(cfg)}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	return opts, nil
}

func (g *globals) addrs() ([]string, error) {
	var out []string
	for _, a := range strings.Split(g.servers, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fail(exitBadArgs, "no servers: pass --servers or set PAROSCTL_SERVERS")
	}
	return out, nil
}

// ctx bounds one call by --timeout.
func (g *globals) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), g.timeout)
}

// dial opens the invocation's one Client: it waits up to --timeout for a
// server to answer. The caller closes the Client.
func (g *globals) dial() (*client.Client, error) {
	addrs, err := g.addrs()
	if err != nil {
		return nil, err
	}
	opts, err := g.clientOptions()
	if err != nil {
		return nil, err
	}
	ctx, cancel := g.ctx()
	defer cancel()
	c, err := client.Dial(ctx, addrs, opts...)
	if err != nil {
		return nil, g.dialError(err)
	}
	return c, nil
}

// dialError is dialError with a hint for --insecure: a cell served with
// TLS answers plaintext with nothing.
func (g *globals) dialError(err error) error {
	if g.insecure && errors.Is(err, client.ErrNoServer) {
		return fail(exitUnreachable, "no server answered: %v (with --insecure: is the cell served with TLS? then set PAROSCTL_CA)", err)
	}
	return dialError(err)
}

// dialError maps client.Dial's error: no server answered (1), the
// credentials were refused (3), or an address list or option Dial refuses
// (2).
func dialError(err error) error {
	switch {
	case errors.Is(err, client.ErrNoServer):
		return fail(exitUnreachable, "no server answered: %v", err)
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	}
	return fail(exitBadArgs, "%v", err)
}

// deniedError is the exit of a refusal of the credentials (3).
func deniedError(err error) error {
	return fail(exitRefused, "refused: %v (check PAROSCTL_TOKEN / --token: its scopes and expiry)", err)
}

func (g *globals) print(human string, v any) {
	if g.json {
		enc := json.NewEncoder(os.Stdout)
		_ = enc.Encode(v)
		return
	}
	fmt.Println(human)
}
