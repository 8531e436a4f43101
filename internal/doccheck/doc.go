// Package doccheck has no code of its own. Its tests keep the repository's
// documentation whole, so that a clone reads on its own:
//
//   - TestLinks walks every Markdown file under the module root (tracked or
//     not; .git, node_modules and bench/results/profiles are skipped),
//     extracts each inline link and image, [text](target), and fails naming
//     file:line for every relative target that does not exist. A target's
//     #anchor, whether into the same file or into another Markdown file, must
//     name a heading there, by GitHub's rules for heading anchors: lower case,
//     punctuation other than - and _ dropped, each space a -, and -1, -2, ...
//     appended to repeated headings. Links inside code spans and fenced code
//     blocks are not links and are skipped, and so are targets with a scheme
//     (http:, https:, mailto:, ...).
//   - TestNoOutsideCitations fails when a tracked .go, .md or .proto file
//     cites design notes, a style guide or spec chapters that do not ship
//     with the repository. A comment or a chapter states its reason itself,
//     or points to a chapter under docs/.
//
// The tests find the module root as the nearest directory above the working
// directory that holds go.mod. .ci/run runs them before the full test run.
package doccheck
