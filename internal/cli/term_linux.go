package cli

import (
	"os"
	"syscall"
	"unsafe"
)

// isTTY reports whether f is a terminal: TCGETS succeeds on terminals only (not on
// /dev/null, which is a character device too).
func isTTY(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}

// ttyWidth is the number of columns of the terminal f, or 0 when f is none.
func ttyWidth(f *os.File) int {
	var ws struct{ rows, cols, x, y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0
	}
	return int(ws.cols)
}
