package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/wire"
)

// cellInitCmd forms a cell through the Machine service's CellInit, which
// the client library does not cover: it asks each member in turn until one
// answers, once each (CellInit itself resumes an interrupted formation).
// CellInit needs a token with admin over every journal.
func cellInitCmd(g *globals) *cobra.Command {
	var members, replicas, proxies string
	var journals uint32
	var plain bool
	cmd := &cobra.Command{
		Use:   "init --members ADDR,ADDR,ADDR",
		Short: "form a cell over the founding members (resumes an interrupted formation)",
		Long: `Form a cell over the founding members (their addresses): each gets the cell
plan, which names the cell's control plane (its registry of machines,
tenants and journals by name, and the election of its coordinator). Journals
are then created by name ('parosctl journal create NAME'). --journals N also
puts N unnamed journals in the plan (at most 100,000), each replicated on
every founding member with majority quorums; the replica tier serves those
only. It prints the cell id and the unnamed journals' ids.

By default every founding member also runs a matchmaker, so the journals can
later move to other machines and quorum systems ('parosctl journal
reconfigure'). --plain forms a cell without matchmakers: its journals keep
their founding members for good, and journal reconfigure refuses.

--replicas names the cell's first replica machines (their addresses; each
started with 'paros serve --role replica'): they vote on nothing, learn
every journal from the leaders and serve reads. 'parosctl replicas set'
changes the list later.

--proxies names the cell's first proxy leaders (their addresses; each
started with 'paros serve --role proxy'): every journal's leader hands them
the Phase 2 of its slots, spread over them by slot. They vote on nothing and
keep no store. 'parosctl proxies set' changes the list later.

Replicas and proxies join once the plan is chosen. Running init again with
the same members resumes an interrupted formation. 'paros dev' forms its
cell itself: this is for machines started with 'paros serve'.`,
		Example: `  parosctl cell init --members 127.0.0.1:7401,127.0.0.1:7402,127.0.0.1:7403
  parosctl cell init --members 10.0.0.1:7400,10.0.0.2:7400,10.0.0.3:7400 --replicas 10.0.0.4:7400`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if _, _, err := g.security(); err != nil {
				return err
			}
			ms, rs, ps := addrList(members), addrList(replicas), addrList(proxies)
			if len(ms) == 0 {
				return fail(exitBadArgs, "--members is required")
			}
			var last error
			for _, a := range ms {
				r, err := g.cellInit(a, &pb.CellInitRequest{Members: ms, Replicas: rs, Proxies: ps, Journals: journals, Plain: plain})
				if denied(err) {
					return fail(exitRefused, "cell init refused: %v (init needs a token with admin over every journal: --all --ops admin)", err)
				}
				if err != nil {
					last = err
					continue
				}
				if !r.GetInitialized() {
					return fail(exitRefused, "cell init refused: %s", r.GetRefusal())
				}
				out := cellInitOut{Cell: fmt.Sprintf("%016x", r.GetPlan().GetCellId()), Journals: []string{}}
				for _, j := range r.GetPlan().GetJournals() {
					out.Journals = append(out.Journals, fmt.Sprintf("%016x/%016x", j.GetTenant(), j.GetJournal()))
				}
				g.print(fmt.Sprintf("cell=%s journals=%s", out.Cell, strings.Join(out.Journals, ",")), out)
				return nil
			}
			return fail(exitUnreachable, "no member answered: %v", last)
		},
	}
	cmd.Flags().StringVar(&members, "members", "", "founding members' addresses")
	cmd.Flags().StringVar(&replicas, "replicas", "", "replica machines' addresses (paros serve --role replica); change them later with 'parosctl replicas set'")
	cmd.Flags().StringVar(&proxies, "proxies", "", "proxy leaders' addresses (paros serve --role proxy); change them later with 'parosctl proxies set'")
	cmd.Flags().Uint32Var(&journals, "journals", 0, "unnamed journals in the cell plan (journals by name: parosctl journal create)")
	cmd.Flags().BoolVar(&plain, "plain", false, "no matchmakers: the journals' membership is fixed for good")
	return withSchema(cmd, cellInitOut{}, false)
}

// cellInit sends one CellInit to the machine at addr, with the token as
// "authorization: Bearer <token>" (over TLS only).
func (g *globals) cellInit(addr string, req *pb.CellInitRequest) (*pb.CellInitReply, error) {
	cfg, token, err := g.security()
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if cfg != nil {
		creds = credentials.NewTLS(cfg)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Forming many journals takes longer than a call: the member bounds
	// its own work by the journal count, and init waits as long.
	ctx, cancel := context.WithTimeout(context.Background(), max(g.timeout, wire.CellInitTimeout(req.GetJournals())+5*time.Second))
	defer cancel()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	return pb.NewMachineClient(conn).CellInit(ctx, req)
}

// denied reports whether a server refused the credentials.
func denied(err error) bool {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return true
	}
	return false
}
