package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/security"
)

// How an invocation reaches the cell: the root's flags, the environment,
// and the one client.Dial every command makes.

// globals are the root command's flags, and where the command prints.
type globals struct {
	servers  string
	output   string
	timeout  time.Duration
	ca       string
	token    string
	insecure bool
	// caFlag and tokenFlag: --ca and --token were given on the command
	// line (not taken from the environment).
	caFlag, tokenFlag bool
	// out and in are the command's standard output and input (a test sets
	// them through the root's SetOut and SetIn).
	out, errOut io.Writer
	in          io.Reader
}

// setup reads what the flags leave to run time (the PAROSCTL_ variables a
// flag was not given for, where to print), once cobra parsed cmd's flags.
func (g *globals) setup(cmd *cobra.Command) {
	f := cmd.Flags()
	g.caFlag, g.tokenFlag = f.Changed("ca"), f.Changed("token")
	if !f.Changed("servers") {
		g.servers = os.Getenv(client.EnvServers)
	}
	if !g.caFlag {
		g.ca = os.Getenv(client.EnvCA)
	}
	if !g.tokenFlag {
		g.token = os.Getenv(client.EnvToken)
	}
	if !f.Changed("insecure") {
		g.insecure, _ = strconv.ParseBool(os.Getenv(client.EnvInsecure))
	}
	g.out, g.errOut, g.in = cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin()
	resolveName = resolveWith(g)
}

// warn prints a note on standard error.
func (g *globals) warn(format string, args ...any) {
	fmt.Fprintf(g.errOut, "parosctl: note: "+format+"\n", args...)
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
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return []client.Option{client.WithInsecure()}, nil
	}
	opts := []client.Option{client.WithTLS(cfg)}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	return opts, nil
}

func (g *globals) addrs() ([]string, error) {
	out := addrList(g.servers)
	if len(out) == 0 {
		return nil, fail(exitBadArgs, "no servers: pass --servers or set PAROSCTL_SERVERS")
	}
	return out, nil
}

// addrList splits a comma-separated list of addresses, dropping blanks.
func addrList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
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

// withCall dials, runs f with a context bounded by --timeout, closes.
func (g *globals) withCall(f func(context.Context, *client.Client) error) error {
	return g.withClient(func(c *client.Client) error {
		ctx, cancel := g.ctx()
		defer cancel()
		return f(ctx, c)
	})
}

// withClient dials, runs f, closes.
func (g *globals) withClient(f func(*client.Client) error) error {
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
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
