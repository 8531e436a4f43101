// Package archtest has no code of its own. Its test enforces the import rules
// that keep the core sans-IO and the layers apart over the module's source
// files: the core and the host read no clock, randomness, disk or network and
// start no goroutine, so the simulator can drive the code that ships.
//
// The test finds the module root (the nearest directory above the working
// directory that holds go.mod), parses every non-test Go file with go/parser
// (every build tag counts, so a //go:build invariants file is checked too),
// and fails on any of these, naming the file, the import and the rule:
//
//	rule                     applies to      forbids
//	-----------------------  --------------  ---------------------------------------------
//	core-stdlib-only         core/           any import except an allowlist of pure
//	                                         standard-library packages and core/ packages
//	core-host-deterministic  core/, host/    time, math/rand(/v2), os, net, sync, runtime,
//	                                         unsafe, and the packages below os, net, sync
//	                                         and runtime
//	core-host-no-goroutines  core/, host/    a go statement
//	host-layering            host/           this module's runtime/, server/, api/
//	sim-no-runtime           sim/            this module's runtime/
//	mesh-independent         mesh/           this module's core/, host/, storage/
//	play-sans-io             play/ but       the packages core-host-deterministic forbids,
//	                         play/web        and (core-host-no-goroutines) a go statement
//
// storage/ may import core/. A directory that does not exist yet is skipped.
// Directories named testdata or vendor, or starting with "." or "_", and nested
// modules are not part of the module and are not walked.
package archtest
