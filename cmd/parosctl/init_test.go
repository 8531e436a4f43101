// This file checks that parosctl cell init hands CellInit what its flags name:
// the members, the replica machines (--replicas) and the proxy leaders
// (--proxies), blanks dropped, through a Machine service that records the
// request and answers it formed.
package main

import (
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

// initRecorder is a Machine service that keeps the CellInit it is sent.
type initRecorder struct {
	pb.UnimplementedMachineServer
	mu  sync.Mutex
	req *pb.CellInitRequest
}

func (r *initRecorder) CellInit(_ context.Context, req *pb.CellInitRequest) (*pb.CellInitReply, error) {
	r.mu.Lock()
	r.req = req
	r.mu.Unlock()
	plan := &pb.CellPlan{CellId: 1, Journals: []*pb.JournalId{{Tenant: 2, Journal: 3}}}
	return &pb.CellInitReply{Initialized: true, Plan: plan}, nil
}

func TestInitNamesTheReplicasAndTheProxies(t *testing.T) {
	// Arrange: a recording Machine service.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &initRecorder{}
	gs := grpc.NewServer()
	pb.RegisterMachineServer(gs, rec)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()
	addr := lis.Addr().String()
	root := newRoot()
	root.SetArgs([]string{"--insecure", "cell", "init", "--members", addr, "--replicas", "d:1", "--proxies", " f:1, g:2,", "--journals", "2"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)

	// Act.
	err = root.Execute()

	// Check.
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if r := rec.req; r == nil || !slices.Equal(r.GetMembers(), []string{addr}) || !slices.Equal(r.GetReplicas(), []string{"d:1"}) ||
		!slices.Equal(r.GetProxies(), []string{"f:1", "g:2"}) || r.GetJournals() != 2 {
		t.Fatalf("CellInit got %+v", r)
	}
}
