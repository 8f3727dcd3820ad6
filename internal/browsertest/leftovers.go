package browsertest

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// leftoverGrace is how long a closed browser's processes get to exit before they are killed
// and reported: they exit within a second on an idle machine, but the whole suite runs beside
// them under -race on two cores.
const leftoverGrace = 10 * time.Second

// killLeftovers waits up to grace for the processes that name dir in their command line to
// exit, then kills those left and returns their ids. Every process of the browser
// names it: the children pass --user-data-dir, and the crash reporter, which detaches from
// the browser, its database under HOME. A closed browser leaves none.
func killLeftovers(dir string, grace time.Duration) []int {
	deadline := time.Now().Add(grace)
	for {
		pids := processesNaming(dir)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesNaming returns the live processes whose command line has dir, or a path under
// it, as a whole argument or inside one (a Chromium child rewrites its command line into
// one string). It finds none where there is no /proc, outside Linux.
func processesNaming(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline") // empty for a zombie
		if err != nil {
			continue
		}
		if names(cmdline, dir) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// names reports whether cmdline has dir followed by a separator ('/', NUL, space, quote)
// or its end, so that /tmp/x/001 does not match /tmp/x/0012.
func names(cmdline []byte, dir string) bool {
	d := []byte(dir)
	for i := bytes.Index(cmdline, d); i >= 0; {
		end := i + len(d)
		if end == len(cmdline) || bytes.IndexByte([]byte("/\x00 \"'"), cmdline[end]) >= 0 {
			return true
		}
		next := bytes.Index(cmdline[i+1:], d)
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}
