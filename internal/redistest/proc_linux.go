package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the server if the test binary dies, so a crashed or
// timed-out test run leaves no redis-server behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
