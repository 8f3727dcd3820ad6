// Package keys builds hash-tagged Redis key names shared by the adapters.
//
// Every key of one topic starts with the same hash tag, {<prefix>:<topic>}, so every script
// touches one Cluster slot. Names are validated by backend.ValidateName before they get here,
// so they hold no braces and cannot break the tag.
package keys

import "strings"

// Tag returns the hash tag shared by every key of topic under prefix: "{prefix:topic}".
func Tag(prefix, topic string) string {
	return "{" + prefix + ":" + topic + "}"
}

// Join builds a key under tag from parts: Join("{p:t}", "g", "default", "ready") is
// "{p:t}:g:default:ready".
func Join(tag string, parts ...string) string {
	var b strings.Builder
	b.WriteString(tag)
	for _, p := range parts {
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}
