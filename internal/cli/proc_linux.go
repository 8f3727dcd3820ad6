package cli

import "syscall"

// childProcAttr makes the kernel kill the redis-server child if this process dies first.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
