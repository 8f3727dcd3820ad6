//go:build !linux

package exampleredis

import "syscall"

func childProcAttr() *syscall.SysProcAttr { return nil }
