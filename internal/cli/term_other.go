//go:build !linux

package cli

import "os"

// isTTY reports whether f is a character device, the closest portable guess at a terminal.
func isTTY(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
