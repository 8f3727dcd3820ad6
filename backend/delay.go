package backend

import "time"

// MaxDelay is the longest delay relq accepts, for a publish (SetDelay, Watermill's delay
// metadata) and for a nack (SetNackDelay, SubscriberConfig.NackBackoff): 100 years of 365
// days. A due time within it stays exact in every unit relq converts it to, while
// time.Duration itself ends at about 292 years. Publish rejects a longer delay with a
// *DelayError; a nack with one dead-letters the message. Neither delivers it early.
const MaxDelay = 100 * 365 * 24 * time.Hour
