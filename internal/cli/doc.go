// Package cli implements the relq command line tool. cmd/relq is a thin main over it; every
// command writes to an injected io.Writer, so tests run commands in-process and read what
// they print.
package cli
