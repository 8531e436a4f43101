package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

const defaultTimeout = 5 * time.Second

type globals struct {
	servers string
	json    bool
	timeout time.Duration
	conns   map[string]*grpc.ClientConn
	byNode  map[uint64]string // node id -> address, learned by Inspect
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

func (g *globals) conn(addr string) (*grpc.ClientConn, error) {
	if g.conns == nil {
		g.conns = map[string]*grpc.ClientConn{}
	}
	if c, ok := g.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	g.conns[addr] = c
	return c, nil
}

func (g *globals) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), g.timeout)
}

// learn maps node ids to addresses with node-only Inspects, so a redirect
// hint (a node id) can be followed.
func (g *globals) learn() {
	if g.byNode != nil {
		return
	}
	g.byNode = map[uint64]string{}
	addrs, _ := g.addrs()
	for _, a := range addrs {
		c, err := g.conn(a)
		if err != nil {
			continue
		}
		ctx, cancel := g.ctx()
		r, err := pb.NewAdminClient(c).Inspect(ctx, &pb.InspectRequest{NodeOnly: true})
		cancel()
		if err == nil {
			g.byNode[r.GetNodeId()] = a
		}
	}
}

// order lists the servers to try, the hinted one first.
func (g *globals) order(hint uint64) []string {
	addrs, _ := g.addrs()
	if hint == 0 {
		return addrs
	}
	g.learn()
	if a, ok := g.byNode[hint]; ok {
		out := []string{a}
		for _, x := range addrs {
			if x != a {
				out = append(out, x)
			}
		}
		return out
	}
	return addrs
}

// parseJournal reads TENANT/JOURNAL (hex halves, as Inspect prints them).
func parseJournal(s string) (*pb.JournalId, error) {
	s = strings.TrimPrefix(s, "id:")
	t, j, ok := strings.Cut(s, "/")
	if !ok {
		return nil, fail(exitBadArgs, "journal %q: want TENANT/JOURNAL in hex", s)
	}
	tv, err1 := strconv.ParseUint(t, 16, 64)
	jv, err2 := strconv.ParseUint(j, 16, 64)
	if err1 != nil || err2 != nil || tv == 0 || jv == 0 {
		return nil, fail(exitBadArgs, "journal %q: want TENANT/JOURNAL in hex, both set", s)
	}
	return &pb.JournalId{Tenant: tv, Journal: jv}, nil
}

func formatJournal(id *pb.JournalId) string {
	return fmt.Sprintf("%016x/%016x", id.GetTenant(), id.GetJournal())
}

func parseUUID(s string) (*pb.LeaderUuid, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		return nil, fail(exitBadArgs, "leader uuid %q: want 32 hex digits", s)
	}
	return &pb.LeaderUuid{Hi: binary.BigEndian.Uint64(b), Lo: binary.BigEndian.Uint64(b[8:])}, nil
}

func formatUUID(u *pb.LeaderUuid) string {
	if u.GetHi() == 0 && u.GetLo() == 0 {
		return "none"
	}
	return fmt.Sprintf("%016x%016x", u.GetHi(), u.GetLo())
}

func randomUUID() *pb.LeaderUuid {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return &pb.LeaderUuid{Hi: binary.BigEndian.Uint64(b[:]) | 1, Lo: binary.BigEndian.Uint64(b[8:])}
}

func (g *globals) print(human string, v any) {
	if g.json {
		enc := json.NewEncoder(os.Stdout)
		_ = enc.Encode(v)
		return
	}
	fmt.Println(human)
}
