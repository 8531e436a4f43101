package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The environment FromEnv reads. `paros dev` writes these variables to
// DIR/parosctl.env, and parosctl reads the same ones, so a program, the
// CLI and the dev cell agree on one description of where the cell is and
// how to reach it.
const (
	// EnvServers: the servers' addresses, host:port, comma-separated.
	EnvServers = "PAROSCTL_SERVERS"
	// EnvCA: the path of the cell's CA certificate (ca.crt): dial over TLS.
	EnvCA = "PAROSCTL_CA"
	// EnvToken: a bearer token from `paros cert token` (optional).
	EnvToken = "PAROSCTL_TOKEN"
	// EnvInsecure: "1" (or "true") dials in plaintext with no token, for a
	// cell served with --insecure.
	EnvInsecure = "PAROSCTL_INSECURE"
)

// ErrEnv: FromEnv found the environment incomplete or contradictory (no
// servers; neither a CA nor plaintext chosen; plaintext with a CA or a
// token). Nothing was dialled.
var ErrEnv = errors.New("paros/client: the environment does not describe a cell")

// FromEnv dials the cell the environment describes (EnvServers, EnvCA,
// EnvToken, EnvInsecure): over TLS trusting EnvCA, presenting EnvToken
// when it is set, or in plaintext when EnvInsecure is set. opts come
// after those, so they may add to them (WithReplicaReads, say). It waits
// for a server as Dial does.
func FromEnv(ctx context.Context, opts ...Option) (*Client, error) {
	var servers []string
	for _, a := range strings.Split(os.Getenv(EnvServers), ",") {
		if a = strings.TrimSpace(a); a != "" {
			servers = append(servers, a)
		}
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrEnv, EnvServers)
	}
	ca, token := os.Getenv(EnvCA), strings.TrimSpace(os.Getenv(EnvToken))
	plaintext, _ := strconv.ParseBool(os.Getenv(EnvInsecure))
	var env []Option
	switch {
	case plaintext && (ca != "" || token != ""):
		return nil, fmt.Errorf("%w: %s dials plaintext and sends no token: unset %s and %s, or %s", ErrEnv, EnvInsecure, EnvCA, EnvToken, EnvInsecure)
	case plaintext:
		env = []Option{WithInsecure()}
	case ca == "":
		return nil, fmt.Errorf("%w: set %s to the cell's ca.crt, or %s=1 for a cell served with --insecure", ErrEnv, EnvCA, EnvInsecure)
	default:
		env = []Option{WithCAFile(ca)}
		if token != "" {
			env = append(env, WithToken(token))
		}
	}
	return Dial(ctx, servers, append(env, opts...)...)
}
