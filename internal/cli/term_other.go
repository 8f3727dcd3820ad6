//go:build !linux

package cli

import "os"

// isTTY reports whether f is a character device, the closest portable guess at a terminal.
func isTTY(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// ttyWidth is 0 (unknown) where relq does not ask the terminal driver: tables take 100.
func ttyWidth(*os.File) int { return 0 }
