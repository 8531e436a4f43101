// Package buildinfo is what a paros binary knows of its own build, from
// runtime/debug.ReadBuildInfo: the module and its version, the VCS
// revision and time it was built from, and the Go version. `paros
// version` and `parosctl version` print it.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Info is a binary's build, as `version -o json` prints it.
type Info struct {
	Binary   string `json:"binary" doc:"the binary: paros or parosctl"`
	Module   string `json:"module" doc:"the main module's path"`
	Version  string `json:"version" doc:"the module version ((devel) for a build from a work tree)"`
	Revision string `json:"revision,omitempty" doc:"the VCS revision built from"`
	Time     string `json:"time,omitempty" doc:"the revision's commit time, RFC 3339"`
	Modified bool   `json:"modified,omitempty" doc:"the work tree had uncommitted changes"`
	Go       string `json:"go" doc:"the Go toolchain that built the binary"`
}

// Read is the running binary's build (binary names it).
func Read(binary string) Info {
	in := Info{Binary: binary, Version: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	in.Module, in.Version, in.Go = bi.Main.Path, bi.Main.Version, bi.GoVersion
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// Text is the build as one line of text.
func (in Info) Text() string {
	parts := []string{in.Binary, in.Version}
	if in.Module != "" {
		parts = append(parts, "module="+in.Module)
	}
	if in.Revision != "" {
		rev := "revision=" + in.Revision
		if in.Modified {
			rev += "+modified"
		}
		parts = append(parts, rev)
	}
	if in.Time != "" {
		parts = append(parts, "time="+in.Time)
	}
	parts = append(parts, "go="+in.Go)
	return strings.Join(parts, " ")
}
