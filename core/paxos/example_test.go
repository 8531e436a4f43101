package paxos_test

import (
	"fmt"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage/memstore"
)

// member is one process of the example: a node and its in-memory disk.
type member struct {
	node  *paxos.Node
	store *memstore.Store
}

// ExampleNode drives a three-member journal by hand: member 1 is ticked
// until it campaigns and wins Phase 1, then it decides a SetLeader (the
// writer's fence) and one fenced Write, and the followers learn both from
// the leader's Commit. The driver is the smallest correct one: it persists
// each Ready's writes (synced when MustSync says so) before it lets the
// batch's messages leave, which is what makes a Promise or an Accepted
// safe to send.
func ExampleNode() {
	sys, _ := quorum.NewMajority([]quorum.ID{1, 2, 3})
	opts := paxos.Options{ElectionTicks: 3, HeartbeatTicks: 1}
	members := map[paxos.NodeID]*member{}
	for _, id := range sys.Members() {
		store := memstore.New()
		boot, _ := store.Boot()
		cfg := paxos.Config{ID: id, Acceptors: sys, Mode: journal.ModeSingle}
		node, err := paxos.NewNode(cfg, opts, boot)
		if err != nil {
			panic(err)
		}
		members[id] = &member{node: node, store: store}
	}

	var inflight []paxos.Message
	// drain runs the Ready/Advance loop of one member.
	drain := func(id paxos.NodeID) {
		m := members[id]
		for m.node.HasReady() {
			rd := m.node.Ready()
			// 1. Persist the writes (and sync if asked) before any message
			// leaves: here the store applies them synchronously.
			if err := m.store.Apply(rd.Writes, rd.MustSync); err != nil {
				panic(err)
			}
			m.node.MarkDurable(rd.Batch)
			// 2. The batch is durable: its messages may leave.
			inflight = append(inflight, rd.Messages...)
			// 3. Answer whoever waits on a newly applied slot.
			if id == 1 {
				for _, c := range rd.Applied {
					fmt.Printf("slot %d: %s -> %s\n", c.Slot, c.Command.Kind, c.Outcome.Kind)
				}
			}
			m.node.Advance()
			// 4. The core draws no randomness: hand it a jittered timeout
			// whenever its election timer was reset.
			if m.node.WantsElectionTimeout() {
				m.node.SetElectionTimeout(opts.ElectionTicks + int(id))
			}
		}
	}
	// deliver steps every message in flight into its addressee.
	deliver := func() {
		for len(inflight) > 0 {
			msg := inflight[0]
			inflight = inflight[1:]
			members[msg.To].node.Step(msg)
			drain(msg.To)
		}
	}

	// The election: only member 1 is ticked, so only it campaigns.
	for !members[1].node.IsLeader() {
		members[1].node.Tick()
		drain(1)
		deliver()
	}
	fmt.Println("leader:", members[1].node.ID())

	// The writer claims the journal, then writes at position 1.
	writer := journal.LeaderUUID{Hi: 1, Lo: 1}
	members[1].node.ProposeControl(journal.SetLeader(writer, journal.LeaderUUID{}))
	members[1].node.Propose(journal.Entry{Leader: writer, Seq: 1, Records: [][]byte{[]byte("hello")}})
	drain(1)
	deliver()

	for _, id := range sys.Members() {
		st := members[id].node.State()
		fmt.Printf("member %d: chosen %d, next position %d\n", id, members[id].node.ChosenIndex(), st.NextSeq)
	}
	// Output:
	// leader: 1
	// slot 1: set-leader -> leader-set
	// slot 2: write -> accepted
	// member 1: chosen 2, next position 2
	// member 2: chosen 2, next position 2
	// member 3: chosen 2, next position 2
}
