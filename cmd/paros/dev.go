package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/machine"
	"github.com/spf13/cobra"
)

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		var data string
		var portBase int
		var verbose bool
		cmd := &cobra.Command{
			Use:   "dev",
			Short: "start a local three-machine cell with one journal (Ctrl-C stops it)",
			Long: `dev starts three paros machines in this process, each with its own data dir and
port on 127.0.0.1, forms them into a cell with one journal, and prints the
endpoints and example parosctl commands. With --data the cell survives
restarts (the ports must stay the same); the default is a temporary dir.`,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runDev(data, portBase, verbose)
			},
		}
		cmd.Flags().StringVar(&data, "data", "", "keep the cell's data here (default: a temporary dir)")
		cmd.Flags().IntVar(&portBase, "port", 7401, "first of three consecutive ports")
		cmd.Flags().BoolVar(&verbose, "verbose", false, "log every machine's events")
		return cmd
	})
}

func runDev(data string, portBase int, verbose bool) error {
	temp := data == ""
	if temp {
		dir, err := os.MkdirTemp("", "paros-dev-")
		if err != nil {
			return err
		}
		data = dir
		defer os.RemoveAll(dir)
	}
	logOut := io.Discard
	if verbose {
		logOut = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	var nodes []*node
	var addrs []string
	defer func() {
		for _, n := range nodes {
			n.stop()
		}
	}()
	for i := range 3 {
		addr := fmt.Sprintf("127.0.0.1:%d", portBase+i)
		n, err := startNode(filepath.Join(data, fmt.Sprintf("machine%d", i+1)), addr, addr, "", log.With("machine", i+1))
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
		addrs = append(addrs, addr)
	}
	plan, err := formDevCell(addrs)
	if err != nil {
		return err
	}
	j := plan.GetJournals()[0]
	jref := formatJournalID(j)
	servers := strings.Join(addrs, ",")
	fmt.Printf("paros dev: a cell of three machines is up (data in %s%s)\n\n", data, map[bool]string{true: ", removed on exit", false: ""}[temp])
	for i, a := range addrs {
		fmt.Printf("  machine %d  %s  node %016x\n", i+1, a, nodes[i].m.NodeID())
	}
	fmt.Printf("\n  cell     %016x\n  journal  %s\n\nTry, in another terminal:\n\n", plan.GetCellId(), jref)
	fmt.Printf("  export PAROSCTL_SERVERS=%s\n", servers)
	fmt.Printf("  go run ./cmd/parosctl write %s hello world\n", jref)
	fmt.Printf("  go run ./cmd/parosctl read %s\n", jref)
	fmt.Printf("  go run ./cmd/parosctl inspect --journal %s\n\n", jref)
	fmt.Println("Ctrl-C stops the cell.")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	for {
		select {
		case <-sig:
			fmt.Println("\nparos dev: stopping")
			return nil
		case <-nodes[0].m.Done():
			return classify(nodes[0].m.Err())
		case <-nodes[1].m.Done():
			return classify(nodes[1].m.Err())
		case <-nodes[2].m.Done():
			return classify(nodes[2].m.Err())
		}
	}
}

// formDevCell runs cell init (it resumes a formed cell: the decree adopts
// the plan the machines already voted for).
func formDevCell(addrs []string) (*pb.CellPlan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plan, err := machine.InitCell(ctx, addrs[0], addrs, 1)
	if err != nil {
		return nil, exitError{exitInfra, err}
	}
	return plan, nil
}

func formatJournalID(id *pb.JournalId) string {
	return fmt.Sprintf("%016x/%016x", id.GetTenant(), id.GetJournal())
}
