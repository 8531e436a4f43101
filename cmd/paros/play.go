package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/play/web"
)

// paros play serves the game: the player is the network and the clock of
// a Multi-Paxos core, in the browser.
func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		var listen string
		cmd := &cobra.Command{
			Use:   "play [--listen ADDR]",
			Short: "play the consensus game in a browser: you are the network and the clock (Ctrl-C stops it)",
			Example: `  paros play                       # then open http://127.0.0.1:7480/
  paros play --listen 0.0.0.0:8080`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				lis, err := net.Listen("tcp", listen)
				if err != nil {
					return exitError{exitBadConfig, fmt.Errorf("--listen %s: %w", listen, err)}
				}
				srv := &http.Server{Handler: web.Handler(), ReadHeaderTimeout: 10 * time.Second}
				fmt.Fprintf(cmd.OutOrStdout(), "paros play: open http://%s/\n", lis.Addr())
				done := make(chan error, 1)
				go func() { done <- srv.Serve(lis) }()
				select {
				case err := <-done:
					return err
				case <-ctx.Done():
				}
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := srv.Shutdown(shut); err != nil {
					return err
				}
				if err := <-done; !errors.Is(err, http.ErrServerClosed) {
					return err
				}
				return nil
			},
		}
		cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7480", "address to serve the game on (keep it on loopback)")
		return cmd
	})
}
