package partition

import (
	"strconv"
	"strings"
)

// A delivery of a partitioned topic is known outside by "<partition>:<ID in the partition>", so
// that an ack, a nack or an operator's command reaches the partition that holds it.

// OuterID names delivery id of partition i as the partitioned topic's.
func OuterID(i int, id string) string { return strconv.Itoa(i) + ":" + id }

// SplitID returns the partition and inner ID of an outer ID; ok is false when id names no
// partition of a topic with p partitions (a foreign or mistyped ID, which holds nothing).
func SplitID(id string, p int) (i int, inner string, ok bool) {
	head, inner, found := strings.Cut(id, ":")
	if !found || inner == "" || head == "" || len(head) > 4 {
		return 0, "", false
	}
	i, err := strconv.Atoi(head)
	if err != nil || i < 0 || i >= p || strconv.Itoa(i) != head {
		return 0, "", false
	}
	return i, inner, true
}

// outer names delivery id of partition i as t's: a topic of one partition keeps the inner
// backend's IDs.
func (t *topic) outer(i int, id string) string {
	if t.single() {
		return id
	}
	return OuterID(i, id)
}

// split is SplitID for t: every ID of a topic of one partition is its partition 0's.
func (t *topic) split(id string) (int, string, bool) {
	if t.single() {
		return 0, id, id != ""
	}
	return SplitID(id, t.layout.Count())
}

// byPartition splits items by the partition their ID names in t, keeping their order within
// each; items naming none go to rest.
func byPartition[T any](items []T, t *topic, id func(T) string, setID func(*T, string)) (parts map[int][]T, rest []T) {
	parts = map[int][]T{}
	for _, it := range items {
		i, inner, ok := t.split(id(it))
		if !ok {
			rest = append(rest, it)
			continue
		}
		setID(&it, inner)
		parts[i] = append(parts[i], it)
	}
	return parts, rest
}
