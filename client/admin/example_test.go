// This file holds the package's testable examples. ExampleClient_Inspect
// runs against a fresh journal of the shared in-process cell that
// cell_test.go starts (three machines, gRPC on 127.0.0.1), so its Output
// is checked like any test; exampleCell stands in for a real cell's
// addresses. ExampleClient_Reconfigure and ExampleClient_Handoff only
// compile: they need a machine to add, and a cell of their own.
package admin_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// exampleCell describes a running cell in the environment
// client.FromEnv reads, as `paros dev`'s parosctl.env does, and returns a
// journal of it that nothing else uses: here, the shared in-process test
// cell (plaintext).
func exampleCell() journal.ID {
	c, id, err := shared.Journal()
	if err != nil {
		log.Fatal(err)
	}
	os.Setenv(client.EnvServers, strings.Join(c.Addrs(), ","))
	os.Setenv(client.EnvInsecure, "1")
	return id
}

// Inspect asks every server for its view of a journal: an operator's
// view, one MemberStatus per server.
func ExampleClient_Inspect() {
	id := exampleCell()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.FromEnv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	adm := admin.New(c)

	leaders := 0
	members := adm.Inspect(ctx, id)
	for _, m := range members {
		if m.Err != nil {
			log.Fatalf("%s: %v", m.Addr, m.Err)
		}
		if m.Role == "leader" {
			leaders++
		}
	}
	fmt.Printf("%d servers, %d leader, quorum %s\n", len(members), leaders, members[0].Quorum)
	// Output: 3 servers, 1 leader, quorum majority
}

// Reconfigure replaces a machine: the journal moves to two of its members
// and a new machine, named by its address (an idle `paros serve`), which
// joins the cell on the way. Once the leader has collected the old
// configuration, the machine left out may delete its copy.
func ExampleClient_Reconfigure() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, []string{"10.0.0.1:7401", "10.0.0.2:7401"},
		client.WithCAFile("ca.crt"), client.WithToken("paros1.admin-token"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	adm := admin.New(c)
	id := journal.ID{Tenant: 0x6ab4a8f847b53c22, Journal: 0x10beec4e97fcb5a4}
	const gone admin.NodeID = 0x595b43867ea72b6b // the machine to replace

	err = adm.Reconfigure(ctx, id, admin.Configuration{
		Members: []string{"1d48499a73176c16", "4827d5df01d7d8d8", "10.0.0.4:7401"},
		Quorum:  admin.Majority(),
	})
	if err != nil {
		log.Fatal(err) // errors.Is(err, client.ErrAmbiguous): the change may still complete
	}
	for ctx.Err() == nil {
		for _, st := range adm.Inspect(ctx, id) {
			if st.Role != "leader" || !st.GCEffective || !slices.Contains(st.Retirable, gone) {
				continue
			}
			if err := adm.Retire(ctx, id, gone, st.GCWatermark); err != nil {
				log.Fatal(err) // an *admin.RetireRefusedError says why
			}
			fmt.Println("retired")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Handoff moves a journal's leadership off its leader before the leader's
// machine is restarted.
func ExampleClient_Handoff() {
	ctx := context.Background()
	c, err := client.FromEnv(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	adm := admin.New(c)
	id := journal.ID{Tenant: 1, Journal: 2}
	leader, err := adm.Handoff(ctx, id, 0) // 0: the acceptor the leader finds most caught up
	switch {
	case errors.Is(err, admin.ErrCannotHandoff):
		// The leader refused (a handed-on leadership, a long open tail):
		// nothing changed.
	case err != nil:
	default:
		fmt.Println(leader, "leads now, at the old ballot")
	}
}
