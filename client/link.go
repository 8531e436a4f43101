package client

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client/internal/link"
)

// The operator's calls live in package client/admin. They build on a few
// pieces of the Client that an application has no use for, which this
// file hands over through client/internal/link rather than exporting
// them: a connection to any machine of the cell, the classification of a
// failed call, and the registry's read-your-writes mark.

func init() {
	link.Of = func(c any) link.Link { return linked{c.(*Client)} }
}

// linked is a Client as package admin sees it.
type linked struct{ c *Client }

func (l linked) Conn(addr string) (*grpc.ClientConn, error) { return l.c.conn(addr) }

func (l linked) CallError(addr, call string, err error, p *peer.Peer) error {
	return machineError(addr, call, err, p)
}

func (l linked) Registry(ctx context.Context) (*pb.RegistryReply, error) { return l.c.registry(ctx) }

func (l linked) SawRegistry(at uint64) { l.c.sawRegistry(at) }

// conn returns a connection to the machine at addr: a server's own when
// addr is one the Client was given, else one dialled with the Client's
// options and kept until Close.
func (c *Client) conn(addr string) (*grpc.ClientConn, error) {
	for _, s := range c.list() {
		if s.addr == addr {
			return s.cc, nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.extra[addr]; ok {
		return cc, nil
	}
	if len(c.extra) >= extraConnsMax {
		return nil, fmt.Errorf("paros/client: %d machines beyond the servers dialled, at most %d", len(c.extra)+1, extraConnsMax)
	}
	cc, err := grpc.NewClient(addr, c.dopts...)
	if err != nil {
		return nil, fmt.Errorf("paros/client: dial %s: %w", addr, err)
	}
	c.extra[addr] = cc
	return cc, nil
}

// machineError is the error of a failed call to the machine at addr: a
// refusal of the credentials (ErrDenied), a call that never left
// (ErrNoServer), or the call's error.
func machineError(addr, call string, err error, p *peer.Peer) error {
	switch {
	case denied(err):
		return deniedError(addr, err)
	case !sent(p):
		return fmt.Errorf("%w: %s %s: %w", ErrNoServer, call, addr, err)
	}
	return fmt.Errorf("paros/client: %s %s: %w", call, addr, err)
}
