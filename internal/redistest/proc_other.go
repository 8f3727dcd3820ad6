//go:build !linux

package redistest

import "os/exec"

// dieWithParent has no portable equivalent outside Linux; servers are stopped by t.Cleanup.
func dieWithParent(*exec.Cmd) {}
