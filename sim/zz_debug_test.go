package sim

import "testing"

func TestZZDebugRot(t *testing.T) {
	run(73, Options{})
}
