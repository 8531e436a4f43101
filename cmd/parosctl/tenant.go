package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
)

// The tenant noun: create, delete, list and show, through client/admin's
// control-plane calls and its Registry.

func tenantCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "create, delete, list and show tenants",
		Long: `Tenants: the namespaces journal names live in (TENANT/NAME). The default
tenant holds the journals named without one; a token can be scoped to one
tenant's journals ('paros cert token --tenant').`,
	}
	create := &cobra.Command{
		Use: "create NAME", Short: "create a tenant", Args: cobra.ExactArgs(1),
		Example: `  parosctl tenant create shop`,
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				id, err := admin.New(c).CreateTenant(ctx, args[0])
				if err != nil {
					return controlExit(err)
				}
				g.print(fmt.Sprintf("tenant %s id=%016x", args[0], id), tenantOut{Name: args[0], ID: fmt.Sprintf("%016x", id)})
				return nil
			})
		},
	}
	del := &cobra.Command{
		Use: "delete NAME", Short: "delete a tenant that holds no journal", Args: cobra.ExactArgs(1),
		Example: `  parosctl tenant delete shop`,
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				if err := admin.New(c).DeleteTenant(ctx, args[0]); err != nil {
					return controlExit(err)
				}
				g.print("deleted tenant "+args[0], deletedOut{Deleted: args[0]})
				return nil
			})
		},
	}
	list := &cobra.Command{
		Use: "list", Short: "list the tenants", Args: cobra.NoArgs,
		Example: `  parosctl tenant list
  parosctl tenant list -o table`,
		RunE: func(_ *cobra.Command, _ []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				reg, err := admin.New(c).Registry(ctx)
				if err != nil {
					return controlExit(err)
				}
				var lines []string
				var rows [][]string
				out := []tenantOut{}
				for _, t := range reg.Tenants {
					n := 0
					for _, j := range reg.Journals {
						if j.Tenant == t.Name {
							n++
						}
					}
					lines = append(lines, fmt.Sprintf("%s id=%016x journals=%d", t.Name, t.ID, n))
					rows = append(rows, []string{t.Name, fmt.Sprintf("%016x", t.ID), fmt.Sprint(n)})
					out = append(out, tenantOut{Name: t.Name, ID: fmt.Sprintf("%016x", t.ID), Journals: n})
				}
				g.printList(lines, []string{"TENANT", "ID", "JOURNALS"}, rows, out)
				return nil
			})
		},
	}
	show := &cobra.Command{
		Use: "show NAME", Short: "show a tenant's id and its journals", Args: cobra.ExactArgs(1),
		Example: `  parosctl tenant show default`,
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				reg, err := admin.New(c).Registry(ctx)
				if err != nil {
					return controlExit(err)
				}
				i := slices.IndexFunc(reg.Tenants, func(t admin.TenantInfo) bool { return t.Name == args[0] })
				if i < 0 {
					return controlExit(fmt.Errorf("%w: tenant %s", admin.ErrUnknownTenant, args[0]))
				}
				t := reg.Tenants[i]
				lines := []string{""}
				out := tenantShowOut{Name: t.Name, ID: fmt.Sprintf("%016x", t.ID), Journals: []journalOut{}}
				for _, j := range reg.Journals {
					if j.Tenant == t.Name {
						lines = append(lines, journalLine(j))
						out.Journals = append(out.Journals, journalOutOf(j))
					}
				}
				lines[0] = fmt.Sprintf("tenant %s id=%016x journals=%d", t.Name, t.ID, len(out.Journals))
				g.print(joinLines(lines), out)
				return nil
			})
		},
	}
	withSchema(create, tenantOut{}, false)
	withSchema(del, deletedOut{}, false)
	withSchema(list, []tenantOut{}, false)
	withSchema(show, tenantShowOut{}, false)
	cmd.AddCommand(create, del, list, show)
	return cmd
}
