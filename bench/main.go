// Command bench is the entry point of paros's side-by-side benchmark
// against etcd and NATS JetStream:
//
//	go run ./bench compare [--quick] [--out DIR]
//
// The harness itself is its own Go module (bench/harness), so the main
// module never carries etcd's or NATS's dependencies; this small launcher,
// part of the main module, runs it with `go run` in that directory and
// passes every argument, the terminal and the exit code through. See
// bench/README.md for the workloads and how to read the results.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	dir, err := harnessDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	cmd := exec.Command("go", append([]string{"run", "."}, absPaths(os.Args[1:])...)...)
	cmd.Dir = dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// absPaths makes the paths among args absolute (the harness runs in
// another directory): an existing file, and the value of --out. The value
// of --only is a list of systems, never a path (even when a file of that
// name exists, such as a `paros` binary built in the root).
func absPaths(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		switch {
		case strings.HasPrefix(a, "--out="):
			out[i] = "--out=" + abs(strings.TrimPrefix(a, "--out="))
		case i > 0 && (args[i-1] == "--out" || args[i-1] == "-out"):
			out[i] = abs(a)
		case i > 0 && (args[i-1] == "--only" || args[i-1] == "-only"):
			// a list of systems: left as it is
		default:
			if _, err := os.Stat(a); err == nil && !strings.HasPrefix(a, "-") {
				out[i] = abs(a)
			}
		}
	}
	return out
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// harnessDir finds bench/harness from the working directory (the
// repository root or anywhere below it).
func harnessDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/parosdb/paros\n") {
			return filepath.Join(d, "bench", "harness"), nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("run inside the paros repository: no go.mod of github.com/parosdb/paros above " + wd)
		}
	}
}
