package mesh

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve runs a runtime until ctx ends: it serves Handler(r) on ln and, once
// per heartbeat, beats, starts a round with every due dial target (one
// goroutine per target; a target whose round is still running is skipped),
// and housekeeps, which compacts once every sixty heartbeats. It returns
// after the HTTP server and every round have stopped.
func Serve(ctx context.Context, r *Runtime, ln net.Listener, log *slog.Logger) error {
	srv := &http.Server{Handler: Handler(r), ReadHeaderTimeout: linkTimeout, ReadTimeout: 2 * linkTimeout}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	var rounds sync.WaitGroup
	tick := time.NewTicker(r.cfg.Heartbeat)
	defer tick.Stop()
	beat := func() {
		r.Beat()
		for _, target := range r.DueTargets() {
			rounds.Go(func() {
				rctx, cancel := context.WithTimeout(ctx, linkTimeout)
				defer cancel()
				if err := r.SyncWith(rctx, target); err != nil && ctx.Err() == nil {
					log.Debug("mesh round failed", "target", target, "err", err)
				}
			})
		}
		r.Housekeep()
	}
	beat()
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-served:
			break loop
		case <-tick.C:
			beat()
		}
	}
	r.Stop()
	rounds.Wait()
	// A round cancelled mid-dial can leave a connection that never carried
	// a request in the client's pool; the peer's server counts it as busy
	// (StateNew) until it is 5 s old, so close ours, and give Shutdown more
	// than those 5 s for the ones peers left with us (found under load:
	// Shutdown's deadline and the 5 s rule raced).
	if c, ok := r.cfg.Transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*linkTimeout)
	defer cancel()
	serr := srv.Shutdown(shutdown)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, serr)
}
