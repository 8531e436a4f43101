package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/parosdb/paros/mesh"
	"github.com/spf13/cobra"
)

func identityCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "identity",
		Short:   "Show this machine's mesh identity (creating the key on first use)",
		Example: `  paros mesh identity`,
		Long: `Show this user's key on this machine, the runtime of this checkout and the
repository id. The public key is what a peer lists in its trust.allow.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			key, created, err := mesh.LoadOrCreateKey(e.stateDir, rand.Reader)
			if err != nil {
				return err
			}
			repo, how, rerr := e.repository()
			out := struct {
				Node       mesh.NodeID     `json:"node"`
				PK         string          `json:"pk"`
				Runtime    mesh.RuntimeKey `json:"runtime"`
				Checkout   string          `json:"checkout"`
				Repository string          `json:"repository,omitempty"`
				RepoSource string          `json:"repository_source,omitempty"`
				KeyFile    string          `json:"key_file"`
				Created    bool            `json:"created"`
				Config     string          `json:"config"`
				ConfigUsed bool            `json:"config_found"`
			}{key.Node, key.PK, mesh.RuntimeKey(string(key.Node) + "-" + e.runtimeID), e.checkout, repo, how,
				mesh.KeyPath(e.stateDir), created, e.cfgPath, e.cfgFound}
			if rerr != nil {
				out.RepoSource = rerr.Error()
			}
			return e.emit(out, func(w io.Writer) {
				fmt.Fprintf(w, "node\t%s\n", out.Node)
				fmt.Fprintf(w, "public key\t%s\n", out.PK)
				fmt.Fprintf(w, "runtime\t%s\n", out.Runtime)
				fmt.Fprintf(w, "checkout\t%s\n", out.Checkout)
				if rerr != nil {
					fmt.Fprintf(w, "repository\tunknown: %v\n", rerr)
				} else {
					fmt.Fprintf(w, "repository\t%s (%s)\n", repo, how)
				}
				note := ""
				if created {
					note = " (created now)"
				}
				fmt.Fprintf(w, "key file\t%s%s\n", out.KeyFile, note)
				cfgNote := " (not found: defaults)"
				if e.cfgFound {
					cfgNote = ""
				}
				fmt.Fprintf(w, "config\t%s%s\n", e.cfgPath, cfgNote)
			})
		},
	}
}

func statusCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "status",
		Short:   "Show the serving runtime's identity, counters and recent refusals",
		Example: `  paros mesh status`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			var st mesh.Status
			if err := e.call("GET", "/status", nil, &st); err != nil {
				return err
			}
			return e.emit(st, func(w io.Writer) {
				fmt.Fprintf(w, "runtime\t%s\n", st.RuntimeKey)
				fmt.Fprintf(w, "stream\t%s (beat %d)\n", st.Stream, st.Beat)
				fmt.Fprintf(w, "repository\t%s\n", st.Repo)
				fmt.Fprintf(w, "trust\t%s\n", st.Trust)
				fmt.Fprintf(w, "heartbeat / expiry\t%gs / %gs\n", st.HeartbeatSeconds, st.ExpirySeconds)
				fmt.Fprintf(w, "streams\t%d held, %d live, %d tombstones\n", st.Streams, st.LiveStreams, st.Tombstones)
				fmt.Fprintf(w, "events\t%d held, %d pending\n", st.Events, st.Pending)
				fmt.Fprintf(w, "links\t%d\n", st.Links)
				t := st.Tallies
				fmt.Fprintf(w, "ingest\t%d received, %d accepted, %d duplicate, %d rejected, %d compacted, %d claims refused\n",
					t.Received, t.Accepted, t.Duplicate, sumRejected(t.Rejected), t.Compacted, t.ClaimsRefused)
				for _, why := range slices.Sorted(maps.Keys(st.LinkRefusals)) {
					fmt.Fprintf(w, "link refusals\t%s: %d\n", why, st.LinkRefusals[why])
				}
				for _, k := range st.UntrustedSeen {
					fmt.Fprintf(w, "untrusted key seen\t%s\n", k)
				}
				if st.StoreError != "" {
					fmt.Fprintf(w, "store error\t%s\n", st.StoreError)
				}
				fmt.Fprintf(w, "digest\t%s\n", st.Digest)
			})
		},
	}
}

func sumRejected(m map[mesh.Refusal]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func peersCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "peers",
		Short:   "List the links this runtime dials and accepts",
		Example: `  paros mesh peers`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			var ps []mesh.PeerView
			if err := e.call("GET", "/peers", nil, &ps); err != nil {
				return err
			}
			if ps == nil {
				ps = []mesh.PeerView{}
			}
			return e.emit(ps, func(w io.Writer) {
				if len(ps) == 0 {
					fmt.Fprintln(w, "no peers (add seeds to .paros/mesh.toml or pass --seed to serve)")
					return
				}
				fmt.Fprintln(w, "DIRECTION\tRUNTIME\tNAME\tLINK\tSTREAM\tHEARD\tENDPOINT")
				for _, p := range ps {
					heard := "-"
					if p.HeardAgoS != nil {
						heard = fmt.Sprintf("%.1fs ago", *p.HeardAgoS)
					}
					rk := string(p.Runtime)
					if rk == "" {
						rk = "?"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Direction, rk, orDash(p.Name), p.State, orDash(p.Liveness), heard, orDash(p.Endpoint))
					if p.LastError != "" {
						fmt.Fprintf(w, "\tlast error: %s\n", p.LastError)
					}
				}
			})
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stateCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "state",
		Short:   "Show the folded state: sessions, claims, handovers, reviews, overlaps and digest",
		Example: `  paros mesh state`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			var st mesh.State
			if err := e.call("GET", "/state", nil, &st); err != nil {
				return err
			}
			return e.emit(st, func(w io.Writer) { printState(w, st) })
		},
	}
}

func printState(w io.Writer, st mesh.State) {
	fmt.Fprintf(w, "sessions (%d)\n", len(st.Sessions))
	for _, s := range st.Sessions {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", s.Key, s.State, s.Info.Intent)
	}
	fmt.Fprintf(w, "claims (%d)\n", len(st.Claims))
	for _, c := range st.Claims {
		status := c.Status.State
		if c.Status.Detail != "" {
			status += " (" + c.Status.Detail + ")"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Key, c.Mode, strings.Join(c.Scope, " "), status)
	}
	fmt.Fprintf(w, "handovers (%d)\n", len(st.Handovers))
	for _, h := range st.Handovers {
		title := h.Info.Name
		if title == "" {
			title, _, _ = strings.Cut(h.Info.Body, "\n")
		}
		fmt.Fprintf(w, "  %s\t%s\ttaken by %d\t%s\n", h.ID, h.Stream.Runtime(), len(h.ConsumedBy), title)
	}
	fmt.Fprintf(w, "reviews (%d)\n", len(st.Reviews))
	for _, r := range st.Reviews {
		fmt.Fprintf(w, "  %s\t%s\t%d answers\t%s\n", r.Key, r.State, len(r.Answers), r.Subject)
	}
	if len(st.Overlaps) > 0 {
		fmt.Fprintf(w, "overlaps (%d)\n", len(st.Overlaps))
		for _, ov := range st.Overlaps {
			fmt.Fprintf(w, "  %s\t%s\n", ov.First, ov.Second)
		}
	}
	if st.OpaqueEvents > 0 {
		fmt.Fprintf(w, "opaque events\t%d\n", st.OpaqueEvents)
	}
	fmt.Fprintf(w, "digest\t%s\n", st.Digest)
}

func sessionCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "session", Short: "Open or close a session of this runtime"}
	var info mesh.SessionInfo
	open := &cobra.Command{
		Use:     "open SESSION",
		Short:   "Open (or describe again) a session",
		Example: `  paros mesh session open s1 --intent "split the storage tests"`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			info.Session = args[0]
			var sv mesh.SessionView
			if err := e.call("POST", "/sessions", info, &sv); err != nil {
				return err
			}
			return e.emit(sv, func(w io.Writer) { fmt.Fprintf(w, "opened session %s\n", sv.Key) })
		},
	}
	f := open.Flags()
	f.StringVar(&info.Client, "client", "paros", "the client working in the session")
	f.StringVar(&info.Intent, "intent", "", "what the session is doing")
	f.StringVar(&info.Task, "task", "", "task name")
	f.StringVar(&info.Issue, "issue", "", "issue reference")
	f.StringVar(&info.Branch, "branch", "", "branch")
	close := &cobra.Command{
		Use:     "close SESSION",
		Short:   "Close a session; its claims end",
		Example: `  paros mesh session close s1`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			if err := e.call("POST", "/sessions/close", map[string]string{"session": args[0]}, nil); err != nil {
				return err
			}
			return e.emit(map[string]string{"closed": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "closed session %s\n", args[0]) })
		},
	}
	cmd.AddCommand(open, close)
	return cmd
}

func claimCmd(o *options) *cobra.Command {
	var req mesh.ClaimRequest
	var advisory bool
	cmd := &cobra.Command{
		Use:   "claim PATH...",
		Short: "Claim repository paths for a session (exit 10 if an exclusive claim of another session holds them)",
		Example: `  paros mesh claim storage/ --session s1 --intent "split the storage tests"
  paros mesh claim docs/guide/ --session s1 --advisory`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			req.Scope = args
			req.Mode = mesh.ModeExclusive
			if advisory {
				req.Mode = mesh.ModeAdvisory
			}
			var cv mesh.ClaimView
			err = e.call("POST", "/claims", req, &cv)
			var ce *mesh.ConflictError
			if errors.As(err, &ce) {
				return e.silentConflict(cmd, ce, args)
			}
			if err != nil {
				return err
			}
			return e.emit(cv, func(w io.Writer) {
				fmt.Fprintf(w, "claimed %s (%s) on %s for session %s\n", cv.Key, cv.Mode, strings.Join(cv.Scope, " "), cv.Session)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Session, "session", "cli", "session holding the claim (opened if needed)")
	f.BoolVar(&advisory, "advisory", false, "advisory claim: never refused; overlaps are reported")
	f.StringVar(&req.Intent, "intent", "", "what the claim is for")
	f.StringVar(&req.Issue, "issue", "", "issue reference")
	return cmd
}

func releaseCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "release CLAIM_KEY",
		Short:   "Release a claim of this runtime",
		Example: `  paros mesh release CLAIM_KEY`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			if err := e.call("POST", "/claims/release", map[string]string{"claim": args[0]}, nil); err != nil {
				return err
			}
			return e.emit(map[string]string{"released": args[0]}, func(w io.Writer) { fmt.Fprintf(w, "released %s\n", args[0]) })
		},
	}
}

func handoverCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "handover", Short: "Publish or take handovers"}
	var info mesh.HandoverInfo
	var file string
	publish := &cobra.Command{
		Use:     "publish [--file FILE]",
		Short:   "Publish a handover (Markdown from --file, or standard input)",
		Example: `  paros mesh handover publish --file notes.md --name "storage split"`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			var body []byte
			if file != "" && file != "-" {
				body, err = os.ReadFile(file)
			} else {
				body, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20))
			}
			if err != nil {
				return err
			}
			info.Body = string(body)
			var hv mesh.HandoverView
			if err := e.call("POST", "/handovers", info, &hv); err != nil {
				return err
			}
			return e.emit(hv, func(w io.Writer) { fmt.Fprintf(w, "published handover %s\n", hv.ID) })
		},
	}
	f := publish.Flags()
	f.StringVar(&file, "file", "", "Markdown file holding the handover (default: standard input)")
	f.StringVar(&info.Name, "name", "", "a title")
	f.StringVar(&info.Task, "task", "", "task name")
	f.StringVar(&info.Issue, "issue", "", "issue reference")
	f.StringVar(&info.Milestone, "milestone", "", "milestone")
	var session, outFile string
	consume := &cobra.Command{
		Use:     "consume ID",
		Short:   "Take a handover: record the taking and print (or --out write) its body",
		Example: `  paros mesh handover consume ID --session s2 --out notes.md`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			var hv mesh.HandoverView
			if err := e.call("POST", "/handovers/consume", map[string]string{"id": args[0], "session": session}, &hv); err != nil {
				return err
			}
			if outFile != "" {
				if err := os.WriteFile(outFile, []byte(hv.Info.Body), 0o644); err != nil {
					return err
				}
			}
			return e.emit(hv, func(w io.Writer) {
				if outFile != "" {
					fmt.Fprintf(w, "took handover %s into %s\n", hv.ID, outFile)
					return
				}
				fmt.Fprint(w, hv.Info.Body)
			})
		},
	}
	consume.Flags().StringVar(&session, "session", "cli", "session taking the handover")
	consume.Flags().StringVar(&outFile, "out", "", "write the body to this file")
	cmd.AddCommand(publish, consume)
	return cmd
}

func reviewCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "review", Short: "Request or answer reviews"}
	var req mesh.ReviewRequest
	request := &cobra.Command{
		Use:     "request SUBJECT",
		Short:   "Ask for a review",
		Example: `  paros mesh review request "the storage split" --session s1 --scope storage/`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			req.Subject = args[0]
			var rv mesh.ReviewView
			if err := e.call("POST", "/reviews", req, &rv); err != nil {
				return err
			}
			return e.emit(rv, func(w io.Writer) { fmt.Fprintf(w, "requested review %s\n", rv.Key) })
		},
	}
	f := request.Flags()
	f.StringVar(&req.Session, "session", "cli", "session asking")
	f.StringVar(&req.Reviewer, "reviewer", "", "runtime key of the reviewer (this runtime or a linked peer)")
	f.StringSliceVar(&req.Scope, "scope", nil, "paths under review")
	f.StringVar(&req.Issue, "issue", "", "issue reference")
	var ans mesh.AnswerRequest
	var verdict string
	answer := &cobra.Command{
		Use:     "answer REVIEW_KEY",
		Short:   "Answer a review (approved, changes_requested or commented)",
		Example: `  paros mesh review answer REVIEW_KEY --session s2 --verdict approved --note "reads well"`,
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			ans.Review, ans.Verdict = args[0], mesh.Verdict(verdict)
			var rv mesh.ReviewView
			if err := e.call("POST", "/reviews/answer", ans, &rv); err != nil {
				return err
			}
			return e.emit(rv, func(w io.Writer) { fmt.Fprintf(w, "answered %s: %s\n", rv.Key, verdict) })
		},
	}
	af := answer.Flags()
	af.StringVar(&ans.Session, "session", "cli", "session answering (not the one that asked)")
	af.StringVar(&verdict, "verdict", "", "approved, changes_requested or commented")
	af.StringVar(&ans.Note, "note", "", "a note")
	_ = answer.MarkFlagRequired("verdict")
	cmd.AddCommand(request, answer)
	return cmd
}

func verifyCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "verify",
		Short:   "Run a live round with every dialed peer and check that marks agree (exit 10 if not)",
		Example: `  paros mesh verify`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			var rep mesh.VerifyReport
			if err := e.call("POST", "/verify", nil, &rep); err != nil {
				return err
			}
			if err := e.emit(rep, func(w io.Writer) {
				for _, p := range rep.Peers {
					who := p.Endpoint
					if who == "" {
						who = string(p.Runtime)
					}
					verdict := "converged"
					if !p.Converged {
						verdict = fmt.Sprintf("differs on %d streams", len(p.Differs))
					}
					fmt.Fprintf(w, "%s\t%s\tround: %s\t%s\n", p.Direction, who, p.Round, verdict)
				}
				if len(rep.Peers) == 0 {
					fmt.Fprintln(w, "no peers linked")
				}
				ok := "ok"
				if !rep.OK {
					ok = "FAILED"
				}
				fmt.Fprintf(w, "verify\t%s\tdigest %s\n", ok, rep.Digest)
			}); err != nil {
				return err
			}
			if !rep.OK {
				return &ExitCoder{Code: ExitConflict, Err: errors.New("verify failed"), Quiet: true}
			}
			return nil
		},
	}
}
