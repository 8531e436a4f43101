// Package browser_test plays paros play in a real browser: Debian's
// chromium, driven over the DevTools protocol by chromedp, against the
// page and API `paros play` serves.
//
// They run with PAROS_BROWSER=1, which .ci/run sets in a step of its own
// after `go test ./...`: a browser is heavy on a two-core machine, and
// beside the black-box tests' timing bounds it would make them flaky.
// Without it they skip. With it, a missing browser (PAROS_CHROME, or
// chromium, chromium-browser or google-chrome on PATH) fails them.
package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"

	"github.com/parosdb/paros/play"
	"github.com/parosdb/paros/play/web"
)

// chrome finds the browser, or skips (fails under PAROS_BROWSER=1).
func chrome(t *testing.T) string {
	t.Helper()
	if os.Getenv("PAROS_BROWSER") != "1" {
		t.Skip("the browser tests run with PAROS_BROWSER=1 (.ci/run sets it)")
	}
	if p := os.Getenv("PAROS_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("PAROS_BROWSER=1 but no chromium found (set PAROS_CHROME or install chromium)")
	return ""
}

// browser is one headless chromium on a page of the game, recording every
// console error or warning and every uncaught exception.
type browser struct {
	ctx  context.Context
	srv  *httptest.Server
	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	exe := chrome(t)
	srv := httptest.NewServer(web.Handler())
	t.Cleanup(srv.Close)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(width, height), chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(cancelC)
	b := &browser{ctx: ctx, srv: srv}
	// The first Run starts the browser; the log domain reports what the
	// page never logs itself (a failed load of one of its files).
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, log.Enable, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				b.mu.Lock()
				b.errs = append(b.errs, m.String()+" "+m.URL)
				b.mu.Unlock()
			}
		}
	}()
	return b
}

// errors returns and clears what the console reported.
func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.errs
	b.errs = nil
	return out
}

// run runs steps with a deadline.
func (b *browser) run(t *testing.T, d time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// open loads a level's page from scratch and waits until it is drawn.
func (b *browser) open(t *testing.T, id string) {
	t.Helper()
	l := levelSummary(t, id)
	err := b.run(t, time.Minute,
		chromedp.Navigate("about:blank"),
		chromedp.Navigate(b.srv.URL+"/#"+id),
		chromedp.WaitVisible(chromedp.ID("world")),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.getElementById("level-title").textContent === %q && document.querySelectorAll("#moves button[data-move]").length > 0`, l.Title)),
	)
	if err != nil {
		t.Fatalf("open %s: %v", id, err)
	}
}

func levelSummary(t *testing.T, id string) play.LevelSummary {
	for _, l := range play.Levels() {
		if l.ID == id {
			return l
		}
	}
	t.Fatalf("no level %s", id)
	return play.LevelSummary{}
}

// Every level's page loads and draws with nothing on the console.
func TestEveryLevelLoadsCleanly(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	for _, l := range play.Levels() {
		b.open(t, l.ID)
		if errs := b.errors(); len(errs) > 0 {
			t.Errorf("%s: the console reported %q", l.ID, errs)
		}
	}
}

// A player wins levels by clicks alone: each move of the recorded
// solution is a button, clicked in turn, until the page says the goal is
// reached. The final screen of each act's level is saved (under
// PAROS_SCREENSHOTS when set, for the guide).
func TestLevelsAreWonByClicks(t *testing.T) {
	b := newBrowser(t, 1280, 800)
	shots := os.Getenv("PAROS_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	for _, id := range []string{"act3/the-stranded-node", "act4/the-handoff", "act4/matchmaker-generations", "act4/faulty-records"} {
		t.Run(id, func(t *testing.T) {
			b.open(t, id)
			moves, err := play.Reference(id)
			if err != nil {
				t.Fatal(err)
			}
			for i, mv := range moves {
				sel := chromedp.CSS(fmt.Sprintf(`button[data-move=%s]`, quote(mv)))
				err := b.run(t, 30*time.Second,
					chromedp.WaitVisible(sel),
					chromedp.Click(sel),
					chromedp.Poll[chromedp.Void](fmt.Sprintf(`location.hash.split(";").length - 1 === %d`, i+1)),
				)
				if err != nil {
					t.Fatalf("move %d %q: %v", i+1, mv, err)
				}
			}
			if err := b.run(t, 30*time.Second, chromedp.Poll[chromedp.Void](`document.getElementById("status").dataset.status !== "open"`)); err != nil {
				t.Fatalf("the status stays open: %v", err)
			}
			status, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.getElementById("status").dataset.status`))
			if err != nil {
				t.Fatal(err)
			}
			png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			if status != "reached" {
				t.Fatalf("after the solution the page says %q, want reached", status)
			}
			name := strings.ReplaceAll(id, "/", "-") + ".png"
			if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
				t.Fatal(err)
			}
			if errs := b.errors(); len(errs) > 0 {
				t.Errorf("the console reported %q", errs)
			}
		})
	}
}

// A shared link is a position: loading a URL with moves in its fragment
// draws the same position the engine computes for that log.
func TestALinkIsAPosition(t *testing.T) {
	b := newBrowser(t, 390, 844) // a phone
	id := "act4/flexible-quorums"
	moves, _ := play.Reference(id)
	log := moves[:5]
	var frag []string
	for _, mv := range log {
		frag = append(frag, strings.ReplaceAll(mv, " ", "%20"))
	}
	want, err := play.Play(id, log, "")
	if err != nil {
		t.Fatal(err)
	}
	err = b.run(t, time.Minute,
		chromedp.Navigate(b.srv.URL+"/#"+id+";"+strings.Join(frag, ";")),
		chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll("#timeline li").length === %d`, len(log))),
	)
	if err != nil {
		t.Fatal(err)
	}
	timeline, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#timeline li").length`))
	if err != nil {
		t.Fatal(err)
	}
	hasWanted, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`!!document.querySelector('button[data-move=%s]')`, quote(want.Moves[0].Move))))
	if err != nil {
		t.Fatal(err)
	}
	if timeline != len(log) || !hasWanted {
		t.Fatalf("the page drew %d timeline entries (want %d), first move offered: %v", timeline, len(log), hasWanted)
	}
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("the console reported %q", errs)
	}
}

// quote is a CSS string literal.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
