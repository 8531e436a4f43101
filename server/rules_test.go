package server

// This file checks the gate's pieces from inside the package: the rule
// table names every RPC of every service a machine registers (Journal,
// Peer, Admin, Machine) exactly once and nothing else, read from the
// generated service descriptors so that a new RPC without a rule fails
// here; the verified-token cache answers from memory, re-checks expiry at
// every use and never holds more than its bound (it is reset when full),
// and a cached token expires at exactly the second a freshly verified one
// does (the boundary second and either side of it);
// the per-principal counter refuses the call past its bound and forgets a
// principal with nothing in flight; and the decoding codec marks bytes
// that do not decode so that checkDecoded answers InvalidArgument, while
// a message that decodes passes untouched.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/security"
)

func TestEveryMethodHasExactlyOneRule(t *testing.T) {
	// Arrange: every method of every service a machine registers.
	var methods []string
	for _, sd := range []grpc.ServiceDesc{pb.Journal_ServiceDesc, pb.Peer_ServiceDesc, pb.Admin_ServiceDesc, pb.Machine_ServiceDesc, pb.Control_ServiceDesc} {
		for _, m := range sd.Methods {
			methods = append(methods, "/"+sd.ServiceName+"/"+m.MethodName)
		}
		for _, s := range sd.Streams {
			methods = append(methods, "/"+sd.ServiceName+"/"+s.StreamName)
		}
	}

	// Act: count the rows naming each.
	rows := map[string]int{}
	for _, r := range rules {
		rows[r.method]++
	}

	// Check: one row per method, no row for anything else.
	for _, m := range methods {
		if rows[m] != 1 {
			t.Errorf("%s has %d rules, want exactly 1", m, rows[m])
		}
		delete(rows, m)
	}
	for m := range rows {
		t.Errorf("a rule names %s, which no registered service has", m)
	}
	for _, r := range rules {
		if r.need == 0 || (r.need == needJournalOp) != (r.op != 0) {
			t.Errorf("rule %+v: a journal rule names an operation and no other rule does", r)
		}
	}
}

func TestTokenCacheRechecksExpiryAndStaysBounded(t *testing.T) {
	// Arrange.
	ca, err := security.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := ca.IssueToken(security.Claims{Subject: "c", Scopes: []security.Scope{{Ops: security.OpRead}},
		IssuedAt: now.Unix(), Expires: now.Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	c := newTokenCache()

	// Act & check: a hit, then the same token past its expiry.
	if _, err := c.verify(ca, tok, now); err != nil {
		t.Fatal(err)
	}
	if len(c.claims) != 1 {
		t.Fatalf("%d cached tokens, want 1", len(c.claims))
	}
	if cl, err := c.verify(ca, tok, now); err != nil || cl.Subject != "c" {
		t.Fatalf("cached: %+v, %v", cl, err)
	}
	if _, err := c.verify(ca, tok, now.Add(2*time.Minute)); !errors.Is(err, security.ErrExpiredToken) {
		t.Fatalf("an expired cached token: %v, want ErrExpiredToken", err)
	}
	if len(c.claims) != 0 {
		t.Fatal("an expired token stayed cached")
	}

	// Act & check: the bound.
	for i := range tokenCacheEntriesMax + 10 {
		tk, err := ca.IssueToken(security.Claims{Subject: fmt.Sprint("c", i), Scopes: []security.Scope{{Ops: security.OpRead}},
			IssuedAt: now.Unix(), Expires: now.Add(time.Minute).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.verify(ca, tk, now); err != nil {
			t.Fatal(err)
		}
		if len(c.claims) > tokenCacheEntriesMax {
			t.Fatalf("%d cached tokens, at most %d", len(c.claims), tokenCacheEntriesMax)
		}
	}
	if _, err := c.verify(ca, "paros1.garbage.x", now); !errors.Is(err, security.ErrBadToken) {
		t.Fatalf("a forged token: %v", err)
	}
}

func TestTokenExpiryIsTheSameColdAndCached(t *testing.T) {
	// Arrange: a token expiring at second exp; a cache that verified it
	// before (at issue), and the CA's own check.
	ca, err := security.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	const iat, exp = 1_900_000_000, 1_900_000_060
	tok, err := ca.IssueToken(security.Claims{Subject: "c", Scopes: []security.Scope{{Ops: security.OpRead}}, IssuedAt: iat, Expires: exp})
	if err != nil {
		t.Fatal(err)
	}
	at := func(sec int64, ns int64) time.Time { return time.Unix(sec, ns) }
	for name, now := range map[string]time.Time{"exp-1": at(exp-1, 0), "exp-1ns": at(exp-1, 999_999_999), "exp": at(exp, 0),
		"exp+1ns": at(exp, 1), "exp+1": at(exp+1, 0)} {
		t.Run(name, func(t *testing.T) {
			warm := newTokenCache()
			if _, err := warm.verify(ca, tok, at(iat, 0)); err != nil {
				t.Fatal(err)
			}

			// Act.
			_, errCA := ca.VerifyToken(tok, now)
			_, errCold := newTokenCache().verify(ca, tok, now)
			_, errCached := warm.verify(ca, tok, now)

			// Check: the one rule (expired from second exp on), whichever
			// path answers.
			wantExpired := now.Unix() >= exp
			for name, err := range map[string]error{"VerifyToken": errCA, "cold": errCold, "cached": errCached} {
				if got := errors.Is(err, security.ErrExpiredToken); got != wantExpired || (!wantExpired && err != nil) {
					t.Errorf("%s at %v: %v; want expired: %v", name, now, err, wantExpired)
				}
			}
		})
	}
}

func TestInflightBoundsEachPrincipal(t *testing.T) {
	// Arrange.
	f := newInflight(2)
	a, b := principal{secured: true, node: 1}, principal{secured: true, node: 2}

	// Act.
	r1, err1 := f.acquire(a)
	r2, err2 := f.acquire(a)
	_, err3 := f.acquire(a)
	rb, errb := f.acquire(b)

	// Check.
	if err1 != nil || err2 != nil || errb != nil {
		t.Fatal(err1, err2, errb)
	}
	if status.Code(err3) != codes.ResourceExhausted {
		t.Fatalf("a third call: %v, want ResourceExhausted", err3)
	}
	r1()
	if r, err := f.acquire(a); err != nil {
		t.Fatalf("after a release: %v", err)
	} else {
		r()
	}
	r2()
	rb()
	if len(f.calls) != 0 {
		t.Fatalf("principals with nothing in flight stayed counted: %v", f.calls)
	}
}

func TestCodecMarksUndecodableBytes(t *testing.T) {
	// Arrange.
	c := newDecodeCheckCodec()
	good, err := proto.Marshal(&pb.WriteRequest{Seq: 7, Records: [][]byte{[]byte("r")}})
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte{0x0a, 0xff, 0xff} // field 1, a length past the end

	// Act.
	var g, b pb.WriteRequest
	errGood := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(good)}, &g)
	errBad := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &b)

	// Check.
	if errGood != nil || errBad != nil {
		t.Fatal(errGood, errBad)
	}
	if err := checkDecoded(&g); err != nil || g.GetSeq() != 7 {
		t.Fatalf("a good message: %v, %v", &g, err)
	}
	if err := checkDecoded(&b); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("bad bytes: %v, want InvalidArgument", err)
	}
}
