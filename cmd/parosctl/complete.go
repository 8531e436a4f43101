package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
)

// Shell completion of journal names (cobra's completion command does the
// rest): the journals the cell lists, through client/admin's Journals call
// with a short timeout. When no cell answers, it completes nothing, and
// says nothing: a prompt is no place for errors.

// completeTimeout bounds the whole lookup, dial included.
const completeTimeout = time.Second

// completeJournal completes a command's JOURNAL argument (its first): the
// default tenant's journals by NAME, the others' by TENANT/NAME.
func (g *globals) completeJournal(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	g.setup(cmd) // completion runs no PersistentPreRun
	addrs, err := g.addrs()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	opts, err := g.clientOptions()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), min(g.timeout, completeTimeout))
	defer cancel()
	c, err := client.Dial(ctx, addrs, opts...)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer c.Close()
	js, err := admin.New(c).Journals(ctx, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, j := range js {
		if j.Deleting {
			continue
		}
		if j.Tenant == client.DefaultTenant {
			names = append(names, j.Name)
		} else {
			names = append(names, j.Tenant+"/"+j.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
