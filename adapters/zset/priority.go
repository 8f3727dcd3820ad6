package zset

import "strconv"

// The supported priorities. OutMessage.Priority (pubsub.SetPriority) is clamped to
// [PriorityMin, PriorityMax]; 0 is the default. Priority orders messages due at the same time
// (see the package doc); it is written into the ready member as a fixed-width rank.
const (
	PriorityMin = -999_999
	PriorityMax = 999_999
)

// rankDigits is the width of the rank PriorityMax - priority at the start of a ready member.
var rankDigits = len(strconv.Itoa(PriorityMax - PriorityMin))

// clampPriority brings p into [PriorityMin, PriorityMax].
func clampPriority(p int) int {
	return min(max(p, PriorityMin), PriorityMax)
}
