package exampleredis

import "syscall"

// childProcAttr keeps the server out of the terminal's process group, so that Ctrl-C stops
// the example (which then stops the server) rather than the server under it, and has the
// kernel kill the server if the example dies first.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
