// This file checks that docs/reference/paros.md is the reference the
// command tree generates now.
package main

import (
	"os"
	"testing"
)

func TestReferenceIsCurrent(t *testing.T) {
	const path = "../../docs/reference/paros.md"
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run `%s` from the repository root", err, docsRefresh)
	}
	if string(got) != reference() {
		t.Fatalf("docs/reference/paros.md is stale: run `%s` from the repository root", docsRefresh)
	}
}
