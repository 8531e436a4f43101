// This file checks canonical JSON, the bytes every signature covers: keys
// sorted by byte order at every depth, no whitespace, UTF-8 written raw
// with only '"', '\\' and control characters escaped (no HTML escaping),
// integers as written and other numbers in one shortest form; repeated
// keys, trailing data and deep nesting are refused. A rapid property checks
// that the encoding is a fixed point and ignores the order keys came in.
package mesh

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCanonicalJSON(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"b":1,"a":{"d":[3, 2],"c":null}}`, `{"a":{"c":null,"d":[3,2]},"b":1}`},
		{`"<&> \u2028 é \u0001 \n \" \\ /"`, `"<&> ` + "\u2028" + ` é \u0001 \n \" \\ /"`},
		{`{"B":1,"a":2,"_":3}`, `{"B":1,"_":3,"a":2}`},
		{`18446744073709551615`, `18446744073709551615`},
		{`-0`, `0`},
		{`1.50`, `1.5`},
		{`1e2`, `100`},
		{`[true,false,null]`, `[true,false,null]`},
	}
	for _, tc := range cases {
		got, err := Canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	refused := []string{`{"a":1,"a":2}`, `{"a":1} {}`, `[1,]`, `1e999`, ``, strings.Repeat("[", canonicalDepthMax+2) + strings.Repeat("]", canonicalDepthMax+2)}
	for _, in := range refused {
		if _, err := Canonical([]byte(in)); !errors.Is(err, ErrNotCanonicalizable) {
			t.Errorf("Canonical(%.40q) err = %v, want ErrNotCanonicalizable", in, err)
		}
	}
}

// genJSON draws a JSON value of limited depth.
func genJSON(t *rapid.T, depth int) any {
	kind := rapid.IntRange(0, 6).Draw(t, "kind")
	if depth > 3 {
		kind %= 4
	}
	switch kind {
	case 0:
		return rapid.String().Draw(t, "s")
	case 1:
		return rapid.Int64().Draw(t, "i")
	case 2:
		return rapid.Bool().Draw(t, "b")
	case 3:
		return nil
	case 4:
		return rapid.Float64().Draw(t, "f")
	case 5:
		n := rapid.IntRange(0, 4).Draw(t, "n")
		out := make([]any, n)
		for i := range out {
			out[i] = genJSON(t, depth+1)
		}
		return out
	}
	n := rapid.IntRange(0, 4).Draw(t, "n")
	out := map[string]any{}
	for range n {
		out[rapid.StringN(0, 6, -1).Draw(t, "k")] = genJSON(t, depth+1)
	}
	return out
}

func TestCanonicalJSONIsAFixedPointAndIgnoresKeyOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Arrange.
		v := genJSON(t, 0)
		raw, err := json.Marshal(v) // escapes HTML, sorts map keys its own way
		if err != nil {
			t.Skip("not representable")
		}

		// Act.
		once, err := Canonical(raw)
		if err != nil {
			t.Fatalf("Canonical(%s): %v", raw, err)
		}
		twice, err := Canonical(once)

		// Check.
		if err != nil || string(once) != string(twice) {
			t.Fatalf("not a fixed point:\n%s\n%s", once, twice)
		}
		var back any
		if err := json.Unmarshal(once, &back); err != nil {
			t.Fatalf("canonical output is not JSON: %s", once)
		}
	})
}

func TestTheDirectEncoderMatchesCanonicalOfMarshal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Arrange: a folded state of a random history, and a status-like value.
		recs, live := genHistory(t)
		st := Fold(recs, func(s StreamID) Liveness { return live[s] })
		extra := struct {
			F  float64           `json:"f"`
			M  map[string]uint64 `json:"m,omitempty"`
			P  *bool             `json:"p,omitempty"`
			B  []byte            `json:"b"`
			Ev Body              `json:"ev"`
		}{F: rapid.Float64Range(-1e6, 1e6).Draw(t, "f"), M: map[string]uint64{"z": 1, "a": 2}, B: []byte("<>"),
			Ev: Body{Kind: KindHandoverConsumed, HandoverID: "x", Session: "s"}}

		for _, v := range []any{st, extra} {
			// Act.
			direct := canonicalMarshal(v)
			raw, _ := json.Marshal(v)
			viaDecoder, err := Canonical(raw)

			// Check.
			if err != nil || string(direct) != string(viaDecoder) {
				t.Fatalf("direct %s\nvia    %s (%v)", direct, viaDecoder, err)
			}
		}
	})
}

func TestTheDigestEncoderMatchesCanonical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Arrange: a folded state, with every optional field drawn.
		recs, live := genHistory(t)
		st := Fold(recs, func(s StreamID) Liveness { return live[s] })
		opt := func(label string) string { return rapid.SampledFrom([]string{"", "x<&>\n\"é"}).Draw(t, label) }
		dirty := rapid.Bool().Draw(t, "dirty")
		st.Sessions = append(st.Sessions, SessionView{Key: "k", Info: SessionInfo{Session: "s", Client: "c", Worker: opt("w"),
			Intent: opt("i"), Task: opt("t"), Issue: opt("is"), Milestone: opt("m"), Checkout: opt("co"), Branch: opt("b"),
			Head: opt("h"), Context: opt("cx"), Dirty: &dirty}})
		st.Claims = append(st.Claims, ClaimView{Key: "k", Scope: []string{"a"}, Intent: opt("ci"), Issue: opt("cis"),
			Supersedes: rapid.SliceOfN(rapid.Just("k"), 0, 2).Draw(t, "sup"), Status: ClaimStatus{State: "held", Detail: opt("d")}})
		st.Handovers = append(st.Handovers, HandoverView{ConsumedBy: []string{}, Info: HandoverInfo{Body: opt("body"),
			Task: opt("ht"), Issue: opt("hi"), Milestone: opt("hm"), Branch: opt("hb"), Head: opt("hh"), CreatedAt: opt("hc"), Name: opt("hn")}})
		st.Reviews = append(st.Reviews, ReviewView{Answers: []Answer{{Session: "s", Verdict: VerdictApproved, Note: opt("n")}},
			Issue: opt("ri"), Reviewer: opt("rr"), Scope: rapid.SliceOfN(rapid.Just("p"), 0, 2).Draw(t, "rs")})
		st.Digest = opt("digest")

		// Act.
		hand := stateCanonical(st)
		reflected := canonicalMarshal(st)

		// Check.
		if string(hand) != string(reflected) {
			t.Fatalf("hand-written %s\nreflected   %s", hand, reflected)
		}
	})
}
