package sansio

import (
	"time"

	"github.com/parosdb/paros/core/journal"
)

// A Pipeline's bounds and options, and the values it hands its driver
// (sends, completions, timers, stats); the scheduler is pipeline.go.

// Bounds of a Pipeline, so a caller that outruns the cell waits instead of
// queueing without limit.
const (
	// DefaultWindow is the appends a Pipeline keeps outstanding (queued, or
	// in a Write not yet settled) unless its options say otherwise: enough
	// for a thousand concurrent appenders to coalesce into few Writes.
	DefaultWindow = 4096
	// WindowMax bounds PipelineOptions.Window.
	WindowMax = 1 << 16
	// DefaultWritesOut is the Writes a Pipeline keeps in flight at once by
	// default. Over an ordered transport (a WriteStream) several Writes out
	// overlap one another's round trips; appends queued meanwhile are
	// coalesced into the next Write.
	DefaultWritesOut = 4
	// WriteAttemptsMax bounds the attempts of one Write. A Write that gets
	// no verdict in as many attempts stops the pipeline (ErrAmbiguous).
	WriteAttemptsMax = 256
	// BackoffMin and BackoffMax bound the pause before a Write is resent
	// after an ambiguous reply or a reply that proposed nothing.
	BackoffMin = 10 * time.Millisecond
	BackoffMax = 500 * time.Millisecond
)

// PipelineOptions shape a Pipeline. Zero fields take the defaults.
type PipelineOptions struct {
	// Window bounds the appends outstanding (default DefaultWindow, at most
	// WindowMax). Append refuses with ErrWindowFull while it is full.
	Window int
	// WritesOut bounds the Writes in flight (default DefaultWritesOut, at
	// most WritesInFlightMax). Appends queued meanwhile are coalesced into
	// the next Write, up to the API's batch limits.
	WritesOut int
	// NoCoalesce cuts each append into its own Write.
	NoCoalesce bool
}

func (o PipelineOptions) withDefaults() PipelineOptions {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	o.Window = min(o.Window, WindowMax)
	if o.WritesOut <= 0 {
		o.WritesOut = DefaultWritesOut
	}
	o.WritesOut = min(o.WritesOut, WritesInFlightMax, o.Window)
	return o
}

// AppendID names one append; WriteID one Write (all its attempts).
type (
	AppendID uint64
	WriteID  uint64
)

// Send is one attempt of a Write the driver must send: Req, identical on
// every attempt.
type Send struct {
	ID      WriteID
	Req     journal.WriteRequest
	Attempt int
}

// Completion settles one append: written at Seq (Err nil), or failed.
type Completion struct {
	ID  AppendID
	Seq journal.Seq
	Err error
}

// Timer asks the driver to call Wake(ID) after After.
type Timer struct {
	ID    WriteID
	After time.Duration
}

// PipelineStats counts what a Pipeline did.
type PipelineStats struct {
	// Appends counts appends completed as written; Writes the Writes
	// completed as Written or Duplicate.
	Appends, Writes uint64
	// Sends counts every attempt handed out, first attempts and resends.
	Sends uint64
	// Ambiguous counts ambiguous replies (each followed by a resend):
	// a lost proposal, an unavailable server, a broken stream.
	Ambiguous uint64
	// Refused counts Writes that did not fit the tail yet (they overtook an
	// earlier Write), each resent after the earlier ones went again.
	Refused uint64
	// RefusedWhileOut counts the refusals that came while another Write of
	// this pipeline was still in flight.
	RefusedWhileOut uint64
	// Unsent counts attempts that reached no server (resent after a pause).
	Unsent uint64
}
