package pubsub

// callSize is how many items the acker puts in one Ack (or Nack) call: AckBatch, or fewer
// after calls that the Redis client timed out. Such a call most often carried more than Redis
// gets through within the client's ReadTimeout, so the acker cuts it in half and sends the
// halves again, and later calls keep the smaller size; after growAfter calls in a row succeed
// at that size it doubles, up to AckBatch again, so that one slow moment does not leave acks
// in small calls for good.
type callSize struct {
	max, cur int
	streak   int // calls in a row that succeeded carrying cur items
}

// growAfter is how many full calls in a row must succeed before the size doubles: each try
// at a size that is too large costs a call that times out (and still runs in Redis).
const growAfter = 8

func newCallSize(max int) *callSize { return &callSize{max: max, cur: max} }

// next returns how many of n waiting items the next call carries.
func (c *callSize) next(n int) int { return min(n, c.cur) }

// ok records a call of n items that succeeded.
func (c *callSize) ok(n int) {
	if n < c.cur || c.cur == c.max {
		return
	}
	if c.streak++; c.streak >= growAfter {
		c.cur, c.streak = min(c.max, 2*c.cur), 0
	}
}

// timedOut records a call of n items that the client timed out: the next carries half.
func (c *callSize) timedOut(n int) {
	c.cur, c.streak = max(1, n/2), 0
}

// full reports whether calls are back at their largest size.
func (c *callSize) full() bool { return c.cur == c.max }
