package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
)

// The cell noun: forming it (init.go), its machine pool (machines,
// add-machine, drain) and each server's facts (inspect.go).

func cellCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cell",
		Short: "form the cell, and list, add, drain and inspect its machines",
		Long: `The cell: formed once over its founding machines (cell init), then a pool of
machines the coordinator places journals on (cell machines, add-machine,
drain), each of which answers for its own facts (cell inspect).`,
	}
	cmd.AddCommand(cellInitCmd(g), cellMachinesCmd(g), cellAddMachineCmd(g), cellDrainCmd(g), cellInspectCmd(g))
	return cmd
}

func cellAddMachineCmd(g *globals) *cobra.Command {
	var domain string
	cmd := &cobra.Command{
		Use:   "add-machine ADDR",
		Short: "admit a machine started on an empty data dir and add it to the pool",
		Long: `Admit the machine at ADDR, a 'paros serve' started on an empty data dir with
a certificate of the cell's CA, to the cell, and add it to the pool: the
coordinator places new journals on it. --failure-domain names where it
fails together with others (a rack, a zone): placement spreads over them.`,
		Example: `  paros serve --data /tmp/m4 --listen 127.0.0.1:7404 --insecure &   # beside 'paros dev --insecure'
  parosctl cell add-machine 127.0.0.1:7404 --failure-domain rack-2`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				id, err := admin.New(c).AddMachine(ctx, args[0], domain)
				if err != nil {
					return controlExit(err)
				}
				g.print(fmt.Sprintf("machine %016x %s up", id, args[0]),
					machineOut{Node: fmt.Sprintf("%016x", id), Addr: args[0], State: "up", FailureDomain: domain})
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&domain, "failure-domain", "", "the machine's failure domain (placement spreads over them)")
	return withSchema(cmd, machineOut{}, false)
}

func cellDrainCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "drain NODE",
		Short: "take a machine out of placement (it keeps its journals)",
		Long: `Take machine NODE (its node id in hex, as cell machines prints it) out of
placement: no new journal is placed on it. It keeps serving the journals it
holds; move them with 'parosctl journal reconfigure'.`,
		Example: `  parosctl cell machines
  parosctl cell drain 4827d5df01d7d8d8`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseNode(args[0])
			if err != nil {
				return err
			}
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				if err := admin.New(c).DrainMachine(ctx, id); err != nil {
					return controlExit(err)
				}
				out := machineOut{Node: fmt.Sprintf("%016x", id), State: "draining"}
				g.print(fmt.Sprintf("machine %016x draining", id), out)
				return nil
			})
		},
	}
	return withSchema(cmd, machineOut{}, false)
}

func cellMachinesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "machines",
		Short: "list the machines of the pool",
		Long: `List the machines of the pool: node id, address, state (up or draining),
failure domain and the journals placed on each; then the coordinator's
address and the control plane's own journals (the registry and the
coordinator election), for moving them off machines being replaced with
'parosctl journal reconfigure'.`,
		Example: `  parosctl cell machines
  parosctl cell machines -o table`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				reg, err := admin.New(c).Registry(ctx)
				if err != nil {
					return controlExit(err)
				}
				out := cellMachinesOut{Machines: []machineOut{}, Coordinator: reg.Coordinator,
					Registry: reg.Control.String(), Election: reg.Election.String()}
				var lines []string
				var rows [][]string
				for _, m := range reg.Machines {
					o := machineOutOf(m)
					lines = append(lines, fmt.Sprintf("%s %s state=%s domain=%q journals=%d", o.Node, o.Addr, o.State, o.FailureDomain, o.Journals))
					rows = append(rows, []string{o.Node, o.Addr, o.State, o.FailureDomain, fmt.Sprint(o.Journals)})
					out.Machines = append(out.Machines, o)
				}
				if reg.Coordinator != "" {
					lines = append(lines, "coordinator "+reg.Coordinator)
				}
				lines = append(lines, fmt.Sprintf("registry %s election %s", reg.Control, reg.Election))
				g.printList(lines, []string{"NODE", "ADDR", "STATE", "DOMAIN", "JOURNALS"}, rows, out)
				return nil
			})
		},
	}
	return withSchema(cmd, cellMachinesOut{}, false)
}

func machineOutOf(m admin.MachineInfo) machineOut {
	state := "up"
	if m.Draining {
		state = "draining"
	}
	return machineOut{Node: fmt.Sprintf("%016x", m.ID), Addr: m.Addr, State: state, FailureDomain: m.FailureDomain, Journals: m.Journals}
}
