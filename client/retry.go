package client

import (
	"context"
	"errors"
	"fmt"
)

// callAttemptsMax bounds the attempts of one Claim or Truncate (each
// attempt already asks every server, see Journal).
const callAttemptsMax = 256

// attempt is what one try of a call reports to resend.
type attempt struct {
	// maybeSent: a request of this call may have been received, so giving
	// up now is ambiguous. A try that replaces the request (a fresh claim
	// after a refusal) sets it back to false.
	maybeSent bool
	// err is the transport error of a try that reached no server.
	err error
}

// failed records a try that got no answer: a denial ends the call (the
// credentials will not change by retrying), anything else is tried again.
func (a *attempt) failed(err error) (bool, error) {
	if errors.Is(err, ErrDenied) {
		return true, err
	}
	a.err = err
	return false, nil
}

// resend is the library's one retry loop: it calls try until try reports
// done, pausing with a doubling backoff (backoffMin to backoffMax) between
// tries, for at most callAttemptsMax tries or until ctx ends. try resends
// the identical request unless it decides otherwise. When resend gives up,
// the error says what is known: ErrAmbiguous when a request may have been
// received (what may still take effect), else the context's error, else
// the last transport error (ErrNoServer).
func resend(ctx context.Context, what string, try func(a *attempt) (done bool, err error)) error {
	var a attempt
	d := backoffMin
	for range callAttemptsMax {
		done, err := try(&a)
		if done {
			return err
		}
		if d, err = pause(ctx, d); err != nil {
			break
		}
	}
	switch {
	case a.maybeSent:
		return fmt.Errorf("%w: %s may still take effect: %v", ErrAmbiguous, what, ctx.Err())
	case ctx.Err() != nil:
		return ctx.Err()
	case a.err != nil:
		return a.err
	}
	return fmt.Errorf("%w: no verdict for %s in %d attempts", ErrAmbiguous, what, callAttemptsMax)
}
