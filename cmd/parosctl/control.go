package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/quorum"
)

// The control-plane commands: journals by name, tenants and the machine
// pool. Each change is one client call, which carries one request id for
// all its retries, so a command that timed out (exit 4) may be run again:
// a second create of the same name answers name_taken only if the first
// landed.

func journalCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "journal", Short: "create, delete, list and show journals by name"}
	cmd.AddCommand(journalCreateCmd(g), journalDeleteCmd(g), journalListCmd(g), journalShowCmd(g))
	return cmd
}

func journalCreateCmd(g *globals) *cobra.Command {
	var members int
	var on, quorumFlag, writer string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "create a journal (NAME is TENANT/NAME, or NAME in the default tenant)",
		Long: `Create a journal by name. The cell coordinator places it on the least loaded
up machines, spread over failure domains (--members N, default 3 or every up
machine when fewer), or exactly on --on ID,ID,ID; the command returns once the
journal answers a read.

--quorum is majority (the default), flexible:Q1:Q2 or grid:RxC; --writer is
single (one fenced writer at a time, the default) or multi (unfenced
appenders).`,
		Example: `  parosctl journal create orders
  parosctl journal create shop/orders --members 5 --quorum flexible:4:2
  parosctl journal create shop/events --writer multi`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var opts []client.CreateOption
			if members > 0 {
				opts = append(opts, client.WithMembers(members))
			}
			if on != "" {
				var ids []uint64
				for _, s := range strings.Split(on, ",") {
					id, err := parseNode(s)
					if err != nil {
						return err
					}
					ids = append(ids, id)
				}
				opts = append(opts, client.WithMemberIDs(ids...))
			}
			if quorumFlag != "" {
				q, err := parseQuorum(quorumFlag)
				if err != nil {
					return err
				}
				opts = append(opts, client.WithQuorum(q))
			}
			switch writer {
			case "", "single":
			case "multi":
				opts = append(opts, client.WithMultiWriter())
			default:
				return fail(exitBadArgs, "--writer %q: want single or multi", writer)
			}
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			info, err := c.CreateJournal(ctx, args[0], opts...)
			if err != nil {
				return controlExit(err)
			}
			g.print(journalLine(info), journalInfoJSON(info))
			return nil
		},
	}
	cmd.Flags().IntVar(&members, "members", 0, "how many acceptors (default 3, or every up machine when fewer)")
	cmd.Flags().StringVar(&on, "on", "", "exactly these machines (node ids in hex, comma-separated)")
	cmd.Flags().StringVar(&quorumFlag, "quorum", "", "majority | flexible:Q1:Q2 | grid:RxC")
	cmd.Flags().StringVar(&writer, "writer", "single", "single | multi")
	return cmd
}

func journalDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "delete a journal: fenced (no append is accepted after it), then its stores removed",
		Example: `  parosctl journal delete orders
  parosctl journal delete shop/orders`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			if err := c.DeleteJournal(ctx, args[0]); err != nil {
				return controlExit(err)
			}
			g.print("deleted "+args[0], map[string]any{"deleted": args[0]})
			return nil
		},
	}
}

func journalListCmd(g *globals) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "list the journals (of one tenant with --tenant)",
		Example: `  parosctl journal list --tenant shop`,
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			js, err := c.Journals(ctx, tenant)
			if err != nil {
				return controlExit(err)
			}
			var lines []string
			out := []map[string]any{}
			for _, j := range js {
				lines = append(lines, journalLine(j))
				out = append(out, journalInfoJSON(j))
			}
			g.print(strings.Join(lines, "\n"), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's journals")
	return cmd
}

func journalShowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "show NAME",
		Short:   "show a journal's id and placement",
		Example: `  parosctl journal show shop/orders`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			tenant, name := client.SplitName(args[0])
			js, err := c.Journals(ctx, tenant)
			if err != nil {
				return controlExit(err)
			}
			for _, j := range js {
				if j.Name == name {
					g.print(journalLine(j), journalInfoJSON(j))
					return nil
				}
			}
			return fail(exitRefused, "journal %s/%s: no journal has that name", tenant, name)
		},
	}
}

func tenantCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "tenant", Short: "create, delete, list and show tenants"}
	create := &cobra.Command{
		Use: "create NAME", Short: "create a tenant", Args: cobra.ExactArgs(1),
		Example: `  parosctl tenant create shop`,
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				id, err := c.CreateTenant(ctx, args[0])
				if err != nil {
					return controlExit(err)
				}
				g.print(fmt.Sprintf("tenant %s id=%016x", args[0], id), map[string]any{"tenant": args[0], "id": fmt.Sprintf("%016x", id)})
				return nil
			})
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Short: "delete a tenant that holds no journal", Args: cobra.ExactArgs(1),
		Example: `  parosctl tenant delete shop`,
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				if err := c.DeleteTenant(ctx, args[0]); err != nil {
					return controlExit(err)
				}
				g.print("deleted tenant "+args[0], map[string]any{"deleted": args[0]})
				return nil
			})
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "list the tenants", Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				reg, err := c.Registry(ctx)
				if err != nil {
					return controlExit(err)
				}
				var lines []string
				out := []map[string]any{}
				for _, t := range reg.Tenants {
					n := 0
					for _, j := range reg.Journals {
						if j.Tenant == t.Name {
							n++
						}
					}
					lines = append(lines, fmt.Sprintf("%s id=%016x journals=%d", t.Name, t.ID, n))
					out = append(out, map[string]any{"name": t.Name, "id": fmt.Sprintf("%016x", t.ID), "journals": n})
				}
				g.print(strings.Join(lines, "\n"), out)
				return nil
			})
		},
	}
	show := &cobra.Command{
		Use: "show NAME", Short: "show a tenant's id and its journals", Args: cobra.ExactArgs(1),
		Example: `  parosctl tenant show shop`,
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				reg, err := c.Registry(ctx)
				if err != nil {
					return controlExit(err)
				}
				i := slices.IndexFunc(reg.Tenants, func(t client.TenantInfo) bool { return t.Name == args[0] })
				if i < 0 {
					return controlExit(fmt.Errorf("%w: tenant %s", client.ErrUnknownTenant, args[0]))
				}
				t := reg.Tenants[i]
				lines := []string{""}
				js := []map[string]any{}
				for _, j := range reg.Journals {
					if j.Tenant == t.Name {
						lines = append(lines, journalLine(j))
						js = append(js, journalInfoJSON(j))
					}
				}
				lines[0] = fmt.Sprintf("tenant %s id=%016x journals=%d", t.Name, t.ID, len(js))
				g.print(strings.Join(lines, "\n"), map[string]any{"name": t.Name, "id": fmt.Sprintf("%016x", t.ID), "journals": js})
				return nil
			})
		},
	}
	cmd.AddCommand(create, del, list, show)
	return cmd
}

func cellCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cell", Short: "the cell's machine pool"}
	var domain string
	add := &cobra.Command{
		Use:   "add-machine ADDR",
		Short: "admit a machine started on an empty data dir and add it to the pool",
		Example: `  paros serve --data /var/lib/paros --listen 10.0.0.4:7400 --tls m4   # on the new machine
  parosctl cell add-machine 10.0.0.4:7400 --failure-domain rack-2`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				id, err := c.AddMachine(ctx, args[0], domain)
				if err != nil {
					return controlExit(err)
				}
				g.print(fmt.Sprintf("machine %016x %s up", id, args[0]), map[string]any{"node": fmt.Sprintf("%016x", id), "addr": args[0]})
				return nil
			})
		},
	}
	add.Flags().StringVar(&domain, "failure-domain", "", "the machine's failure domain (placement spreads over them)")
	drain := &cobra.Command{
		Use: "drain NODE", Short: "take a machine out of placement (it keeps its journals)", Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseNode(args[0])
			if err != nil {
				return err
			}
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				if err := c.DrainMachine(ctx, id); err != nil {
					return controlExit(err)
				}
				g.print(fmt.Sprintf("machine %016x draining", id), map[string]any{"node": fmt.Sprintf("%016x", id), "state": "draining"})
				return nil
			})
		},
	}
	machines := &cobra.Command{
		Use: "machines", Short: "list the machines of the pool", Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				reg, err := c.Registry(ctx)
				if err != nil {
					return controlExit(err)
				}
				var lines []string
				out := []map[string]any{}
				for _, m := range reg.Machines {
					state := "up"
					if m.Draining {
						state = "draining"
					}
					lines = append(lines, fmt.Sprintf("%016x %s state=%s domain=%q journals=%d", m.ID, m.Addr, state, m.FailureDomain, m.Journals))
					out = append(out, map[string]any{"node": fmt.Sprintf("%016x", m.ID), "addr": m.Addr, "state": state,
						"failure_domain": m.FailureDomain, "journals": m.Journals})
				}
				if reg.Coordinator != "" {
					lines = append(lines, "coordinator "+reg.Coordinator)
				}
				// The control journals' ids, for moving them off machines
				// being replaced (parosctl reconfigure).
				lines = append(lines, fmt.Sprintf("registry %s election %s", reg.Control, reg.Election))
				g.print(strings.Join(lines, "\n"), out)
				return nil
			})
		},
	}
	cmd.AddCommand(add, drain, machines)
	return cmd
}

// withCall dials, runs f with a context bounded by --timeout, closes.
func (g *globals) withCall(f func(context.Context, *client.Client) error) error {
	return g.withClient(func(c *client.Client) error {
		ctx, cancel := g.ctx()
		defer cancel()
		return f(ctx, c)
	})
}

// withClient dials, runs f, closes.
func (g *globals) withClient(f func(*client.Client) error) error {
	c, err := g.dial()
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

func journalLine(j client.JournalInfo) string {
	state := "live"
	if j.Deleting {
		state = "deleting"
	}
	writer := "single"
	if j.Multi {
		writer = "multi"
	}
	return fmt.Sprintf("%s/%s id=%016x/%016x members=%s quorum=%s writer=%s state=%s",
		j.Tenant, j.Name, j.ID.Tenant, j.ID.Journal, nodeList(j.Members), quorumText(j.Quorum), writer, state)
}

func journalInfoJSON(j client.JournalInfo) map[string]any {
	return map[string]any{"tenant": j.Tenant, "name": j.Name, "id": fmt.Sprintf("%016x/%016x", j.ID.Tenant, j.ID.Journal),
		"members": hexIDs(j.Members), "quorum": quorumText(j.Quorum), "multi_writer": j.Multi, "deleting": j.Deleting}
}

func quorumText(q quorum.Spec) string {
	switch q.Kind {
	case quorum.KindFlexible:
		return fmt.Sprintf("flexible:%d:%d", q.Q1, q.Q2)
	case quorum.KindGrid:
		return fmt.Sprintf("grid:%dx%d", q.Rows, q.Cols)
	}
	return "majority"
}

// controlExit maps a control-plane error to its exit: refused (3) for a
// decided refusal or the credentials, ambiguous (4) when the change may
// still land, unreachable (1) when no server answered.
func controlExit(err error) error {
	switch {
	case errors.Is(err, client.ErrAmbiguous):
		return fail(exitAmbiguous, "%v (the change may have landed: check with journal list or tenant list before running it again)", err)
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	case errors.Is(err, client.ErrNoServer) && !errors.Is(err, client.ErrNoControlPlane):
		return fail(exitUnreachable, "%v", err)
	}
	return fail(exitRefused, "%v", err)
}
