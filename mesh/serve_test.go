// This file checks the I/O shell in process: two runtimes run Serve on
// loopback listeners with the HTTP transport and the system clock (a 50 ms
// heartbeat), one seeded with the other; a claim made through the local
// API of one reaches the other, where a claim meeting it is then refused as
// a conflict through the API client. It is the one mesh test on real time, so
// it polls with a deadline instead of sleeping for a fixed time; run under
// -race it covers the supervisor's goroutines and the HTTP handlers.
package mesh

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

func TestServeLinksTwoRuntimesOverHTTP(t *testing.T) {
	// Arrange.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key, _ := GenerateKey(rand.Reader)
	start := func(name string, seeds ...string) (*Runtime, string, chan error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		trust, _ := NewTrust(TrustDenyUnknown, key.PK, nil)
		r, err := New(Config{Key: key, Runtime: RuntimeOf(name), Repo: testRepo(t), Name: name,
			Heartbeat: 50 * time.Millisecond, Expiry: 200 * time.Millisecond, Trust: trust, Seeds: seeds,
			Clock: SystemClock(), Rand: rand.Reader, Transport: NewHTTPTransport()})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, r, ln, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
		return r, "http://" + ln.Addr().String(), done
	}
	_, aURL, aDone := start("a")
	_, bURL, bDone := start("b", aURL)
	apiA, apiB := NewAPIClient(aURL), NewAPIClient(bURL)

	// Act.
	var claim ClaimView
	if err := apiA.Do(ctx, "POST", "/claims", ClaimRequest{Session: "s", Scope: []string{"src"}}, &claim); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		var st State
		if err := apiB.Do(ctx, "GET", "/state", nil, &st); err == nil && len(liveClaims(st)) == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling real servers; the protocol tests use a ManualClock
	}
	err := apiB.Do(ctx, "POST", "/claims", ClaimRequest{Session: "t", Scope: []string{"src/x"}}, nil)

	// Check.
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Key != claim.Key {
		t.Fatalf("b's claim: %v, want a conflict naming %s", err, claim.Key)
	}
	cancel()
	for _, d := range []chan error{aDone, bDone} {
		if err := <-d; err != nil {
			t.Fatalf("Serve: %v", err)
		}
	}
}
