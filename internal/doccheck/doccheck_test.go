// This file checks the repository's Markdown links and its citations (see
// doc.go). TestLinks and TestNoOutsideCitations run over the module itself.
// TestSlug pins the heading-anchor rules on headings of the kinds the docs
// use, and TestCheckFile feeds checkFile small documents in a temporary
// directory so that each kind of broken link is seen to fail and the good
// ones to pass; TestCitationPattern does the same for the citation pattern.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// skipped reports whether the walk skips the directory rel (relative to the
// root): version control and vendored JavaScript anywhere, and the
// benchmark profiles.
func skipped(rel string) bool {
	switch filepath.Base(rel) {
	case ".git", "node_modules":
		return true
	}
	return filepath.ToSlash(rel) == "bench/results/profiles"
}

// markdownFiles lists every .md file under root, tracked or not, as paths
// relative to root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && skipped(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A doc is one Markdown file as the checks see it: the lines outside fenced
// code blocks (code lines are blanked, so line numbers stay right) and the
// anchors its headings define.
type doc struct {
	lines   []string
	anchors map[string]bool
}

var (
	fenceRE   = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	headingRE = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlIDRE  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	codeRE    = regexp.MustCompile("`+[^`]*`+")
	// linkRE matches the target of an inline link or image: "](" then the
	// target, up to whitespace (a title may follow) or the closing ")".
	linkRE   = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
	mdLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

func parseDoc(src []byte) doc {
	d := doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence, fence := false, ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := fenceRE.FindStringSubmatch(line); m != nil {
			switch {
			case !inFence:
				inFence, fence = true, m[1]
			case m[1] == fence:
				inFence = false
			}
			d.lines = append(d.lines, "")
			continue
		}
		if inFence {
			d.lines = append(d.lines, "")
			continue
		}
		d.lines = append(d.lines, line)
		if m := headingRE.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				d.anchors[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				d.anchors[s] = true
			}
			seen[s]++
		}
		for _, m := range htmlIDRE.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
	}
	return d
}

// slug is GitHub's anchor for a heading: the heading's text (a link's text
// stands for the link) in lower case, with every character that is not a
// letter, a digit, a space, - or _ dropped, and each space made a -.
func slug(heading string) string {
	text := mdLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// docCache parses each Markdown file once.
type docCache struct {
	root string
	docs map[string]*doc
}

func (c *docCache) get(rel string) (*doc, error) {
	if d, ok := c.docs[rel]; ok {
		return d, nil
	}
	src, err := os.ReadFile(filepath.Join(c.root, rel))
	if err != nil {
		return nil, err
	}
	d := parseDoc(src)
	c.docs[rel] = &d
	return &d, nil
}

// checkFile returns one problem per broken link of the Markdown file rel
// (relative to the cache's root), each as "file:line: ...".
func checkFile(c *docCache, rel string) []string {
	d, err := c.get(rel)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", rel, err)}
	}
	var problems []string
	for i, line := range d.lines {
		where := fmt.Sprintf("%s:%d", filepath.ToSlash(rel), i+1)
		for _, m := range linkRE.FindAllStringSubmatch(codeRE.ReplaceAllString(line, ""), -1) {
			if p := checkTarget(c, rel, d, m[1]); p != "" {
				problems = append(problems, fmt.Sprintf("%s: link %q: %s", where, m[1], p))
			}
		}
	}
	return problems
}

// checkTarget says what is wrong with one link target of file rel, or "".
func checkTarget(c *docCache, rel string, d *doc, target string) string {
	if target == "" || schemeRE.MatchString(target) {
		return ""
	}
	path, anchor, hasAnchor := strings.Cut(target, "#")
	if path == "" {
		if hasAnchor && anchor != "" && !d.anchors[anchor] {
			return "no heading with that anchor in this file"
		}
		return ""
	}
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	var to string
	if strings.HasPrefix(path, "/") {
		to = filepath.Clean(filepath.FromSlash(strings.TrimPrefix(path, "/")))
	} else {
		to = filepath.Join(filepath.Dir(rel), filepath.FromSlash(path))
	}
	if to == ".." || strings.HasPrefix(to, ".."+string(filepath.Separator)) {
		return "points outside the repository"
	}
	info, err := os.Stat(filepath.Join(c.root, to))
	if err != nil {
		return "no such file or directory"
	}
	if !hasAnchor || anchor == "" || info.IsDir() || !strings.HasSuffix(to, ".md") {
		return ""
	}
	td, err := c.get(to)
	if err != nil {
		return err.Error()
	}
	if !td.anchors[anchor] {
		return fmt.Sprintf("no heading with anchor #%s in %s", anchor, filepath.ToSlash(to))
	}
	return ""
}

// TestLinks checks every relative link and anchor of every Markdown file.
func TestLinks(t *testing.T) {
	root := moduleRoot(t)
	files := markdownFiles(t, root)
	if !slices.Contains(files, "README.md") {
		t.Fatalf("walked %d Markdown files from %s and README.md is not one of them", len(files), root)
	}
	c := &docCache{root: root, docs: map[string]*doc{}}
	for _, f := range files {
		for _, p := range checkFile(c, f) {
			t.Error(p)
		}
	}
}

// citationPattern matches a citation of notes that do not ship with the
// repository. It is built from pieces so that this file does not match it.
var citationPattern = regexp.MustCompile(strings.Join([]string{
	"DESIGN" + " §",
	"DESIGN" + `\.md`,
	"STYLE" + " rule",
	"STYLE" + `\.md`,
	"(?i:reference" + " design)",
	"reference" + "-design",
	"mesh" + "-reference",
	"seed" + " chapter",
	`\.\./` + "shared",
	"spec" + "/0",
}, "|"))

// trackedSources lists the tracked .go, .md and .proto files, relative to
// root; without git (an exported tree) it walks the tree instead.
func trackedSources(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--", "*.go", "*.md", "*.proto")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, filepath.FromSlash(f))
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && skipped(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(rel) {
		case ".go", ".md", ".proto":
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestNoOutsideCitations fails on every line of a tracked source that cites
// notes outside the repository.
func TestNoOutsideCitations(t *testing.T) {
	root := moduleRoot(t)
	self := filepath.Join("internal", "doccheck", "doccheck_test.go")
	files := trackedSources(t, root)
	if len(files) == 0 {
		t.Fatal("no source files found")
	}
	for _, f := range files {
		if f == self {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // tracked, but deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := citationPattern.FindString(line); m != "" {
				t.Errorf("%s:%d: cites %q, which does not ship with the repository: state the reason, or point to a chapter under docs/", filepath.ToSlash(f), i+1, m)
			}
		}
	}
}

// TestSlug checks the anchors of headings like the ones the docs have.
func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"The hot window: bounded memory", "the-hot-window-bounded-memory"},
		{"Decided truncation and the trim-point jump", "decided-truncation-and-the-trim-point-jump"},
		{"`parosctl` exit codes", "parosctl-exit-codes"},
		{"`ProposeIn(entry, column)` fills the slots it skips", "proposeinentry-column-fills-the-slots-it-skips"},
		{"Reads, writes & more — done", "reads-writes--more--done"},
		{"snake_case and CAPS", "snake_case-and-caps"},
		{"See [the core](core.md) first", "see-the-core-first"},
		{"Étape 2", "étape-2"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestCheckFile checks checkFile on small documents: every kind of broken
// link is reported with its file and line, and good links are not.
func TestCheckFile(t *testing.T) {
	// Arrange.
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/guide/a.md", "# A\n\n## Same\n\n## Same\n")
	write("img/x.svg", "<svg/>")
	write("docs/README.md", strings.Join([]string{
		"# Index", // 1
		"[a](guide/a.md) [same](guide/a.md#same) [again](guide/a.md#same-1)",       // 2
		"![x](../img/x.svg) [web](https://example.com/nope.md) [mail](mailto:a@b)", // 3
		"[top](#index) [dir](guide/) [root](/docs/guide/a.md)",                     // 4
		"[gone](guide/b.md)",                             // 5: broken
		"[bad anchor](guide/a.md#nope)",                  // 6: broken
		"[self](#nope)",                                  // 7: broken
		"`[code](not/checked.md)` and [out](../../x.md)", // 8: broken (outside)
		"```",                      // 9
		"[fenced](not/checked.md)", // 10
		"```",                      // 11
		`[titled](guide/a.md "A title") [escaped](guide%2Fa.md)`, // 12
	}, "\n"))
	c := &docCache{root: root, docs: map[string]*doc{}}

	// Act.
	got := checkFile(c, filepath.Join("docs", "README.md"))

	// Check.
	want := []string{
		`docs/README.md:5: link "guide/b.md": no such file or directory`,
		`docs/README.md:6: link "guide/a.md#nope": no heading with anchor #nope in docs/guide/a.md`,
		`docs/README.md:7: link "#nope": no heading with that anchor in this file`,
		`docs/README.md:8: link "../../x.md": points outside the repository`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("checkFile reported\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestCitationPattern checks that the pattern catches each kind of outside
// citation and leaves in-repository pointers and paper citations alone.
func TestCitationPattern(t *testing.T) {
	bad := []string{
		"(" + "DESIGN" + " §3)", "see " + "DESIGN" + ".md", "(" + "STYLE" + " rule 11)",
		"Reference" + " design §2.2", "seed" + " chapter 000", "../" + "shared/spec",
		"spec" + "/003_x.txt", "reference" + "-design.md", "mesh" + "-reference.md",
	}
	good := []string{
		"docs/design/core.md", "Flexible Paxos §3", "Matchmaker Paxos §4",
		"the design chapters", "docs/reference/errors.md", "a seed of the sweep",
	}
	for _, s := range bad {
		if !citationPattern.MatchString(s) {
			t.Errorf("%q is not caught", s)
		}
	}
	for _, s := range good {
		if citationPattern.MatchString(s) {
			t.Errorf("%q is caught, want it left alone", s)
		}
	}
}
