package machine

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

// InitCell is the operator's side of cell init (what `parosctl init`,
// `paros dev`, the test cell and the bench harness do): it asks the machine
// at via to run the decree over members with the given number of journals,
// and retries while a member is not up yet or another proposer contends,
// until ctx ends. It returns the chosen plan.
func InitCell(ctx context.Context, via string, members []string, journals uint32) (*pb.CellPlan, error) {
	conn, err := grpc.NewClient(via, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	last := "no answer"
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := pb.NewMachineClient(conn).CellInit(cctx, &pb.CellInitRequest{Members: members, Journals: journals})
		cancel()
		if err == nil && r.GetInitialized() {
			return r.GetPlan(), nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = r.GetRefusal()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("paros/machine: cell init: %w (last answer: %s)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
