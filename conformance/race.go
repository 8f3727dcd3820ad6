//go:build race

package conformance

// raceEnabled reports a build with the race detector (-race).
const raceEnabled = true
