package zset

import "strconv"

// The supported priorities. OutMessage.Priority (pubsub.SetPriority) is clamped to
// [PriorityMin, PriorityMax]; 0 is the default. Among the messages that are due, higher
// priority is claimed first (see the package doc); it is kept as a fixed-width rank,
// PriorityMax - priority, in the score or the member of the message's ZSET entry.
const (
	PriorityMin = -999_999
	PriorityMax = 999_999
)

// rankDigits is the width of the rank PriorityMax - priority at the start of a member of the
// due-time ZSET ("ready").
var rankDigits = len(strconv.Itoa(PriorityMax - PriorityMin))

// dueDigits is the width of the due time (ms) at the start of a member of the claim-order ZSET
// ("queue"): members of one priority sort by it bytewise. 13 digits hold the Redis clock until
// November 2286, and keep a queue member as short as a ready one.
const dueDigits = 13

// clampPriority brings p into [PriorityMin, PriorityMax].
func clampPriority(p int) int {
	return min(max(p, PriorityMin), PriorityMax)
}
