//go:build !linux

package cli

import "syscall"

func childProcAttr() *syscall.SysProcAttr { return nil }
