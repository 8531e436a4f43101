package host

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/paxos"
)

// SetProxies replaces the proxy list of every journal this process serves
// (the operator added, removed or replaced a proxy machine): a leader takes
// back the rounds of a proxy that left the list and delegates to the new
// list from its next batch (paxos.Node.SetProxies), and a later boot uses
// it too. Nothing is changed unless every journal accepts the list.
func (h *Host) SetProxies(ids []paxos.NodeID) error {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	for _, j := range h.journals {
		c := j.cfg
		c.Proxies = ids
		if err := c.Validate(); err != nil {
			return fmt.Errorf("paros/host: journal %s: %w", j.spec.ID, err)
		}
	}
	for _, j := range h.journals {
		if j.status == Live {
			if err := j.node.SetProxies(ids); err != nil {
				return fmt.Errorf("paros/host: journal %s: %w", j.spec.ID, err)
			}
			h.drain(j)
		}
	}
	for _, j := range h.journals {
		j.spec.Proxies, j.cfg.Proxies = ids, ids
	}
	h.flush()
	return nil
}
